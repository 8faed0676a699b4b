//! The `tracing` feature: a run is a `bsp run` span and every superstep of
//! every processor a `superstep` span inside it, with its sync's figures
//! recorded at its close. A small subscriber records every span, its
//! parent, its fields, and when it was entered, left and closed.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

#[derive(Clone, Debug, Default)]
struct SpanRecord {
    name: &'static str,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
    entered: usize,
    exited: usize,
    closed: bool,
}

/// Every span this subscriber has seen, by id (ids start at 1).
#[derive(Clone, Default)]
struct Recorder {
    spans: Arc<Mutex<Vec<SpanRecord>>>,
    refs: Arc<Mutex<BTreeMap<u64, usize>>>,
}

thread_local! {
    /// The spans entered on this thread, innermost last.
    static STACK: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let parent = match attrs.parent() {
            Some(id) => Some(id.into_u64()),
            None if attrs.is_contextual() => STACK.with(|s| s.borrow().last().copied()),
            None => None,
        };
        let mut record = SpanRecord {
            name: attrs.metadata().name(),
            parent,
            ..SpanRecord::default()
        };
        attrs.record(&mut Fields(&mut record.fields));
        // One lock at a time: `try_close` takes `refs`, then `spans`.
        let id = {
            let mut spans = self.spans.lock().unwrap();
            spans.push(record);
            spans.len() as u64
        };
        self.refs.lock().unwrap().insert(id, 1);
        Id::from_u64(id)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.spans.lock().unwrap();
        values.record(&mut Fields(&mut spans[span.into_u64() as usize - 1].fields));
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, span: &Id) {
        STACK.with(|s| s.borrow_mut().push(span.into_u64()));
        self.spans.lock().unwrap()[span.into_u64() as usize - 1].entered += 1;
    }

    fn exit(&self, span: &Id) {
        let top = STACK.with(|s| s.borrow_mut().pop());
        assert_eq!(top, Some(span.into_u64()), "spans left out of order");
        self.spans.lock().unwrap()[span.into_u64() as usize - 1].exited += 1;
    }

    fn clone_span(&self, id: &Id) -> Id {
        *self.refs.lock().unwrap().get_mut(&id.into_u64()).unwrap() += 1;
        id.clone()
    }

    fn try_close(&self, id: Id) -> bool {
        let mut refs = self.refs.lock().unwrap();
        let left = refs.get_mut(&id.into_u64()).unwrap();
        *left -= 1;
        let closed = *left == 0;
        if closed {
            self.spans.lock().unwrap()[id.into_u64() as usize - 1].closed = true;
        }
        closed
    }
}

fn field<'a>(span: &'a SpanRecord, name: &str) -> &'a str {
    span.fields
        .get(name)
        .unwrap_or_else(|| panic!("{} span without {name}: {span:?}", span.name))
}

#[test]
fn a_run_and_its_supersteps_are_spans() {
    let recorder = Recorder::default();
    let out = tracing::subscriber::with_default(recorder.clone(), || {
        let runtime = bsp_core::Runtime::threads(2).with_router(bsp_core::Router::TwoPhase);
        runtime.run(|ctx| {
            let a = ctx.coarray::<u64>(4);
            ctx.sync(); // superstep 0: registration only
            ctx.put(1 - ctx.pid(), &a, 0, &[1, 2, 3]);
            ctx.sync(); // superstep 1: 3 words to the other processor
            tracing::info_span!("mine").in_scope(|| ctx.local(&a).iter().sum::<u64>());
            ctx.sync(); // superstep 2: nothing
            ctx.local(&a)[2]
        })
    })
    .unwrap();
    assert_eq!(out.all(), Some(&[3, 3][..]));

    let spans = recorder.spans.lock().unwrap().clone();
    let id_of = |index: usize| index as u64 + 1;
    let runs: Vec<usize> = (0..spans.len())
        .filter(|&i| spans[i].name == "bsp run")
        .collect();
    assert_eq!(runs.len(), 1, "one run span: {spans:#?}");
    let run = &spans[runs[0]];
    assert_eq!((field(run, "p"), field(run, "transport")), ("2", "threads"));
    assert!(run.closed && run.entered == 2 && run.exited == 2, "{run:?}");

    for pid in 0..2 {
        let steps: Vec<usize> = (0..spans.len())
            .filter(|&i| spans[i].name == "superstep" && field(&spans[i], "pid") == pid.to_string())
            .collect();
        // Three syncs end supersteps 0, 1 and 2; superstep 3 ends with the run.
        let numbers: Vec<&str> = steps
            .iter()
            .map(|&i| field(&spans[i], "superstep"))
            .collect();
        assert_eq!(numbers, ["0", "1", "2", "3"], "pid {pid}");
        for &i in &steps {
            let step = &spans[i];
            assert_eq!(step.parent, Some(id_of(runs[0])), "{step:?}");
            assert!(
                step.closed && step.entered == 1 && step.exited == 1,
                "{step:?}"
            );
            let syncs: Vec<&SpanRecord> = spans
                .iter()
                .filter(|s| s.name == "sync" && s.parent == Some(id_of(i)))
                .collect();
            let synced = field(step, "superstep") != "3";
            assert_eq!(syncs.len(), usize::from(synced), "{step:?}");
            assert!(syncs
                .iter()
                .all(|s| s.closed && s.entered == 1 && s.exited == 1));
            if synced {
                assert_eq!(field(step, "router"), "two-phase");
                assert!(field(step, "sync_ns").parse::<u64>().unwrap() > 0);
            } else {
                assert!(!step.fields.contains_key("router"), "{step:?}");
            }
        }
        let (s0, s1, s2) = (&spans[steps[0]], &spans[steps[1]], &spans[steps[2]]);
        for quiet in [s0, s2] {
            assert_eq!(field(quiet, "h"), "0");
            assert_eq!(field(quiet, "bytes_out"), "0");
            assert_eq!(field(quiet, "records_in"), "0");
        }
        // One put of 24 bytes (a 12-byte short header): the same h
        // everywhere, one record each way.
        assert_eq!(field(s1, "h"), "36");
        assert_eq!(field(s1, "bytes_out"), "36");
        assert_eq!(field(s1, "bytes_in"), "36");
        assert_eq!(
            (field(s1, "records_out"), field(s1, "records_in")),
            ("1", "1")
        );
        // The program's own span falls inside superstep 2.
        let mine: Vec<&SpanRecord> = spans
            .iter()
            .filter(|s| s.name == "mine" && s.parent == Some(id_of(steps[2])))
            .collect();
        assert_eq!(mine.len(), 1, "pid {pid}: {spans:#?}");
    }
}

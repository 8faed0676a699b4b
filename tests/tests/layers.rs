//! Layers: no import cycle between the top-level modules of any crate,
//! and a transport layer in bsp-core that imports only mechanisms.
//!
//! A *module* is a top-level file or folder of a crate's `src/` (`lib.rs`
//! and `main.rs` are the crate itself; `src/bin/` holds crates of their
//! own). An *edge* a → b is any path `crate::b` written in any file of a:
//! a `use`, a path in code, a doc link, a `use crate::{b, …}` group. The
//! test reads the sources of every crate of the workspace (the members of
//! the root `Cargo.toml` and the root package), finds the strongly
//! connected components of each crate's graph, and fails naming every
//! cycle and the files (with lines) that make its edges.
//!
//! Run with `--nocapture` to print each crate's graph (module → modules it
//! imports), the graph ARCHITECTURE.md draws:
//!
//! ```text
//! cargo test -p bsp-tests --test layers -- --nocapture
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Where each edge of one crate's graph is written: `(from, to)` → the
/// places (`file:line`, relative to the workspace root).
type Edges = BTreeMap<(String, String), Vec<String>>;

/// The workspace root: the parent of this package's directory (the test
/// package lives one level below it, as `bsp-tests/` or `tests/`).
fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = here
        .parent()
        .expect("the test package has a parent directory");
    assert!(
        root.join("Cargo.toml").is_file(),
        "no Cargo.toml at {}",
        root.display()
    );
    root.to_path_buf()
}

/// The crates of the workspace, as directories relative to the root: `.`
/// (the root package) and the `members` of `[workspace]`.
fn crates(root: &Path) -> Vec<String> {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    let start = manifest
        .find("members")
        .and_then(|at| manifest[at..].find('[').map(|open| at + open + 1))
        .expect("Cargo.toml lists the workspace's members");
    let end = start + manifest[start..].find(']').expect("members list ends");
    let mut out = vec![".".to_owned()];
    out.extend(
        manifest[start..end]
            .split(',')
            .map(|m| m.trim().trim_matches('"').to_owned())
            .filter(|m| !m.is_empty()),
    );
    out
}

/// The top-level modules of the crate whose sources are in `src`, each
/// with its files: `x.rs` and the folder `x/` are one module `x`.
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let Ok(entries) = fs::read_dir(src) else {
        return out;
    };
    for entry in entries {
        let path = entry.expect("read src entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let module = if path.is_dir() {
            if name == "bin" {
                continue;
            }
            name
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if stem == "lib" || stem == "main" {
                continue;
            }
            stem.to_owned()
        } else {
            continue;
        };
        let files = out.entry(module).or_default();
        rust_files(&path, files);
    }
    for files in out.values_mut() {
        files.sort();
    }
    out
}

/// `path` if it is a Rust file, or every Rust file under it.
fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in fs::read_dir(path).expect("read module folder") {
            rust_files(&entry.expect("read module entry").path(), out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier at the start of `text` (after blanks), if any.
fn leading_ident(text: &str) -> Option<&str> {
    let text = text.trim_start();
    let end = text.find(|c: char| !is_ident(c)).unwrap_or(text.len());
    (end > 0).then(|| &text[..end])
}

/// The first names of the items of the group that starts just after its
/// `{` at the beginning of `text`: `a, b::{c, d}, e::f }` gives a, b, e.
fn group_heads(text: &str) -> Vec<&str> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut item = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                heads.extend(leading_ident(&text[item..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.extend(leading_ident(&text[item..i]));
                item = i + 1;
            }
            _ => {}
        }
    }
    heads
}

/// The names `text` reaches through `crate::`, each with the byte offset
/// of its `crate::`: `crate::x…` gives x, `crate::{a, b::c}` gives a and b.
fn crate_paths(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        if text[..at].chars().next_back().is_some_and(is_ident) {
            continue; // `my_crate::`, not `crate::`
        }
        let rest = text[at + "crate::".len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            out.extend(group_heads(group).into_iter().map(|m| (at, m)));
        } else if let Some(name) = leading_ident(rest) {
            out.push((at, name));
        }
    }
    out
}

/// The edges of one crate's module graph, with where each is written.
fn edges(root: &Path, modules: &BTreeMap<String, Vec<PathBuf>>) -> Edges {
    let mut edges = Edges::new();
    for (from, files) in modules {
        for file in files {
            let text = fs::read_to_string(file).expect("read source file");
            for (at, to) in crate_paths(&text) {
                if to == from || !modules.contains_key(to) {
                    continue;
                }
                let line = text[..at].matches('\n').count() + 1;
                let shown = file.strip_prefix(root).unwrap_or(file).display();
                edges
                    .entry((from.clone(), to.to_owned()))
                    .or_default()
                    .push(format!("{shown}:{line}"));
            }
        }
    }
    edges
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(nodes: &BTreeSet<String>, edges: &Edges) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        next: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.next.get(v).cloned().unwrap_or_default() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                loop {
                    let w = self.stack.pop().expect("v is on the stack");
                    self.on_stack.remove(w);
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    let mut t = Tarjan {
        next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in nodes {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.found.sort();
    t.found
}

#[test]
fn the_parser_reads_paths_and_groups() {
    let text = "use crate::a::X;\nuse crate::{b, c::{d, e::f}, self, g::*};\n\
                /// [`Y`](crate::h::Y) and my_crate::i, $crate::j\nfn f() { crate::k() }";
    let names: Vec<&str> = crate_paths(text).into_iter().map(|(_, m)| m).collect();
    assert_eq!(names, ["a", "b", "c", "self", "g", "h", "j", "k"]);
}

#[test]
fn a_cycle_is_found_with_its_members() {
    let nodes: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
    let mut edges = Edges::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        edges.insert((from.into(), to.into()), vec![]);
    }
    assert_eq!(cycles(&nodes, &edges), vec![vec!["a", "b", "c"]]);
    edges.remove(&("c".to_owned(), "a".to_owned()));
    assert!(cycles(&nodes, &edges).is_empty());
}

#[test]
fn no_crate_has_an_import_cycle_between_its_top_level_modules() {
    let root = workspace_root();
    let mut failures = Vec::new();
    let mut seen = BTreeMap::new();
    for krate in crates(&root) {
        let src = root.join(&krate).join("src");
        let modules = modules(&src);
        let edges = edges(&root, &modules);
        let nodes: BTreeSet<String> = modules.keys().cloned().collect();
        println!("{krate}/src: {} modules", nodes.len());
        for m in &nodes {
            let to: Vec<&str> = edges
                .keys()
                .filter(|(from, _)| from == m)
                .map(|(_, to)| to.as_str())
                .collect();
            println!("  {m} -> {}", to.join(", "));
        }
        for cycle in cycles(&nodes, &edges) {
            let mut report = format!("{krate}/src: cycle {}", cycle.join(" <-> "));
            for ((from, to), places) in &edges {
                if cycle.contains(from) && cycle.contains(to) {
                    report += &format!("\n    {from} -> {to}: {}", places.join(", "));
                }
            }
            failures.push(report);
        }
        seen.insert(krate, nodes.len());
    }
    // The test must have read the crates it guards.
    for krate in [
        "bsp-core",
        "bsp-algos",
        "bsp-sort",
        "bsp-bsplib",
        "benchmarks",
        ".",
    ] {
        assert!(
            seen.contains_key(krate),
            "crate {krate} is not a member of the workspace at {}",
            root.display()
        );
    }
    assert!(
        seen["bsp-core"] > 10,
        "bsp-core/src read without its modules"
    );
    assert!(
        failures.is_empty(),
        "import cycles between top-level modules (a module must not import one that \
         imports it back; move the items both need into a lower module):\n  {}",
        failures.join("\n  ")
    );
}

/// The modules of bsp-core below the transport boundary may import: the
/// transport knows processors, bytes, memory regions and the clock, and
/// nothing of `Ctx`, records, routers or the runtime, so that a new
/// transport is written against `Comm` alone.
const TRANSPORT_MAY_IMPORT: [&str; 7] = [
    "env",
    "error",
    "exit_hook",
    "pool",
    "segments",
    "shared_memory",
    "ticks",
];

#[test]
fn the_transport_layer_imports_only_mechanisms() {
    let root = workspace_root();
    let modules = modules(&root.join("bsp-core").join("src"));
    assert!(
        modules.contains_key("transport"),
        "bsp-core/src/transport is gone"
    );
    let edges = edges(&root, &modules);
    let beyond: Vec<String> = edges
        .iter()
        .filter(|((from, to), _)| {
            from == "transport" && !TRANSPORT_MAY_IMPORT.contains(&to.as_str())
        })
        .map(|((_, to), places)| format!("transport -> {to}: {}", places.join(", ")))
        .collect();
    assert!(
        beyond.is_empty(),
        "the transport layer imports above its boundary (it may import only {}):\n  {}",
        TRANSPORT_MAY_IMPORT.join(", "),
        beyond.join("\n  ")
    );
}

//! The README's tour is `examples/tour.rs`, verbatim: the program that CI
//! runs on threads and under `mpirun` is the one a newcomer reads.

#[test]
fn the_readme_tour_is_examples_tour() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let read = |file: &str| {
        std::fs::read_to_string(format!("{root}/{file}"))
            .unwrap_or_else(|e| panic!("cannot read {file}: {e}"))
    };
    let (readme, tour) = (read("README.md"), read("examples/tour.rs"));
    let block = readme
        .split_once("## A tour")
        .and_then(|(_, rest)| rest.split_once("```rust\n"))
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(block, _)| block)
        .expect("README.md has a ```rust block under \"## A tour\"");
    let start = tour
        .find("use bsp::prelude::*;")
        .expect("examples/tour.rs starts its program with `use bsp::prelude::*;`");
    assert_eq!(
        block,
        &tour[start..],
        "README.md's tour and examples/tour.rs differ: change both"
    );
}

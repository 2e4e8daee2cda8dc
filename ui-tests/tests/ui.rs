//! Every forbidden misuse has one compile-fail test named after it; its `.stderr` is the
//! advice a user sees.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}

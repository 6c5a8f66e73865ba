//! A Loom plugin written in Rust: the pass RustFoldDoubleNegation, which
//! rewrites `neg(neg(E))` into `E` on the module's IR text, and
//! RustPanicExample, which panics to show what a panic in a pass becomes
//! (a Loom error naming the pass).  Built by cargo as a cdylib named
//! libloom_rust_passes.so; Loom finds it on LOOM_PLUGIN_PATH by its
//! manifest.  (A file name without the loom_ prefix is fine: the core reads
//! the manifest of every .so in its search path.)

loom::loom_plugin! {
    name: "rust_passes",
    version: "1.0.0",
    description: "passes written in Rust: RustFoldDoubleNegation, RustPanicExample",
    provides: "pass:RustFoldDoubleNegation,pass:RustPanicExample",
    init: init
}

fn init() -> loom::Result<()> {
    loom::plugin::register_pass(
        "RustFoldDoubleNegation",
        "neg(neg(x)) -> x (a pass written in Rust, on the IR text)",
        0,
        |module| {
            let text = module.text()?;
            let folded = fold_double_negation(&text);
            if folded == text {
                return Ok(module.clone());
            }
            loom::plugin::IrModule::parse(&folded, "RustFoldDoubleNegation")
        },
    )?;
    loom::plugin::register_pass(
        "RustPanicExample",
        "panics: shows that a panic in a pass becomes a Loom error naming the pass",
        0,
        |_| panic!("this pass always panics"),
    )
}

const PATTERN: &str = "neg(neg(";

/// Every `neg(neg(E))` as `E`, innermost pairs included, until
/// none is left.  E is the inner call's whole argument text (balanced
/// parentheses); the outer call must close right after the inner one.
fn fold_double_negation(text: &str) -> String {
    let mut out = text.to_string();
    loop {
        let mut changed = false;
        let mut from = 0;
        while let Some(found) = out[from..].find(PATTERN) {
            let start = from + found;
            // A name ending in "neg(" (my_neg) is not the operator.
            let before = out[..start].chars().last();
            if before.map_or(false, |c| c.is_alphanumeric() || c == '_' || c == '.') {
                from = start + 1;
                continue;
            }
            let inner = start + PATTERN.len();
            match closing(&out, inner) {
                Some(end) if out[end + 1..].starts_with(')') => {
                    let argument = out[inner..end].to_string();
                    out.replace_range(start..end + 2, &argument);
                    changed = true;
                    from = start;
                }
                _ => from = start + 1,
            }
        }
        if !changed {
            return out;
        }
    }
}

/// The index of the ')' that closes a call whose arguments start at `at`.
fn closing(text: &str, at: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (k, c) in text[at..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(at + k),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::fold_double_negation as fold;

    #[test]
    fn folds_pairs_and_leaves_the_rest() {
        assert_eq!(fold("relu(neg(neg(%x)))"), "relu(%x)");
        assert_eq!(fold("neg(neg(neg(neg(add(%x, %y)))))"), "add(%x, %y)");
        assert_eq!(fold("neg(neg(neg(%x)))"), "neg(%x)");
        assert_eq!(fold("neg(add(neg(%x), %y))"), "neg(add(neg(%x), %y))");
        assert_eq!(fold("my_neg(neg(%x))"), "my_neg(neg(%x))");
        assert_eq!(fold("neg(neg(%x), %y)"), "neg(neg(%x), %y)");
    }
}

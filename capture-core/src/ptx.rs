//! A small PTX reader: the entry points of a module and their parameter lists, so that a
//! launch's arguments can be checked against the kernel's signature before the driver sees
//! them (on both the GPU and the simulated device).

/// The type class of a PTX parameter (or of a kernel argument), which a launch checks
/// besides the size: a `u32` passed where the PTX declares `.f32` has the right size and
/// computes garbage, so it is refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParamClass {
    /// `.f16`, `.bf16`, `.f32`, `.f64` (and their `x2` forms): takes floats only.
    Float,
    /// `.s8` … `.s64`: takes signed integers only.
    Signed,
    /// `.u8` … `.u64`: takes unsigned integers; `.u64` also takes device pointers (nvcc
    /// declares pointer parameters as `.u64`).
    Unsigned,
    /// `.b8` … `.b64`, `.pred`: untyped bits; takes integers and pointers, not floats.
    Bits,
    /// A parameter with a `.ptr` qualifier: takes device pointers only.
    Pointer,
    /// A by-value array or struct (`.b8 name[24]`): no launch argument matches it.
    Aggregate,
}

impl ParamClass {
    /// Whether an argument of class `arg` may be passed to a parameter of this class
    /// (sizes are checked separately). Arguments are `Float`, `Signed`, `Unsigned` or
    /// `Pointer`.
    #[inline]
    pub fn accepts(self, arg: ParamClass) -> bool {
        use ParamClass::*;
        matches!(
            (self, arg),
            (Float, Float)
                | (Signed, Signed)
                | (Unsigned, Unsigned | Pointer)
                | (Bits, Signed | Unsigned | Pointer)
                | (Pointer, Pointer)
        )
    }

    /// A bit mask of the argument classes this parameter class accepts (bit = `arg as u8`),
    /// precomputed per kernel so the per-launch check is a shift and a mask.
    pub(crate) fn accept_mask(self) -> u8 {
        use ParamClass::*;
        [Float, Signed, Unsigned, Bits, Pointer, Aggregate]
            .iter()
            .filter(|a| self.accepts(**a))
            .fold(0u8, |m, a| m | 1 << (*a as u8))
    }

    /// "float", "signed integer", …: for error messages.
    pub fn describe(self) -> &'static str {
        match self {
            ParamClass::Float => "float",
            ParamClass::Signed => "signed integer",
            ParamClass::Unsigned => "unsigned integer",
            ParamClass::Bits => "untyped bits",
            ParamClass::Pointer => "device pointer",
            ParamClass::Aggregate => "by-value aggregate",
        }
    }
}

/// One `.param` of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The parameter's name in the PTX (empty when the declaration has none).
    pub name: String,
    /// The PTX type, e.g. `u64`, `f32`, or `b8[24]` for a by-value struct.
    pub ty: String,
    /// Its size in bytes.
    pub bytes: usize,
    /// Its type class.
    pub class: ParamClass,
}

/// A kernel entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSignature {
    /// The entry's name.
    pub name: String,
    /// Its parameters, in order.
    pub params: Vec<Param>,
}

impl KernelSignature {
    /// "3 parameters (u64, u64, u32)".
    pub fn describe(&self) -> String {
        let tys: Vec<&str> = self.params.iter().map(|p| p.ty.as_str()).collect();
        format!("{} parameter{} ({})", tys.len(), if tys.len() == 1 { "" } else { "s" }, tys.join(", "))
    }
}

fn scalar_class(ty: &str) -> ParamClass {
    if ty.starts_with('f') || ty.starts_with("bf") {
        ParamClass::Float
    } else if ty.starts_with('s') {
        ParamClass::Signed
    } else if ty.starts_with('u') {
        ParamClass::Unsigned
    } else {
        ParamClass::Bits
    }
}

fn scalar_bytes(ty: &str) -> Option<usize> {
    Some(match ty {
        "b8" | "u8" | "s8" | "pred" => 1,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 2,
        "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" => 4,
        "b64" | "u64" | "s64" | "f64" => 8,
        _ => return None,
    })
}

/// Parses the `.entry` declarations of a PTX module.
///
/// # Errors
/// A message naming what could not be read (no entry at all, an unterminated parameter list,
/// an unknown parameter type).
pub fn parse(ptx: &str) -> Result<Vec<KernelSignature>, String> {
    let mut out = Vec::new();
    let mut rest = ptx;
    while let Some(pos) = rest.find(".entry") {
        let after = &rest[pos + ".entry".len()..];
        // Must be a whole word.
        if !after.starts_with(char::is_whitespace) {
            rest = after;
            continue;
        }
        let after = after.trim_start();
        let name_end =
            after.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$' || c == '.')).unwrap_or(after.len());
        let name = after[..name_end].to_owned();
        if name.is_empty() {
            return Err("an `.entry` without a name".into());
        }
        let tail = after[name_end..].trim_start();
        let mut params = Vec::new();
        if let Some(list) = tail.strip_prefix('(') {
            let close = list.find(')').ok_or_else(|| format!("entry `{name}`: parameter list is not closed"))?;
            for decl in list[..close].split(',').map(str::trim).filter(|d| !d.is_empty()) {
                params.push(parse_param(decl).map_err(|e| format!("entry `{name}`: {e}"))?);
            }
            rest = &list[close..];
        } else {
            rest = tail;
        }
        out.push(KernelSignature { name, params });
    }
    if out.is_empty() {
        return Err("no `.entry` found: is this PTX text (not a cubin, and not CUDA C source)?".into());
    }
    Ok(out)
}

fn parse_param(decl: &str) -> Result<Param, String> {
    // Qualifiers may be joined (`.ptr.global.align 16`, as the PTX ISA writes them) or
    // separate (`.ptr .global .align 16`): split joined ones into words.
    let mut words: Vec<&str> = Vec::new();
    for w in decl.split_whitespace() {
        if w.starts_with('.') && w[1..].contains('.') {
            let mut rest = w;
            while let Some(next) = rest[1..].find('.') {
                words.push(&rest[..next + 1]);
                rest = &rest[next + 1..];
            }
            words.push(rest);
        } else {
            words.push(w);
        }
    }
    if words.first() != Some(&".param") {
        return Err(format!("`{decl}` is not a `.param` declaration"));
    }
    let mut i = 1;
    let mut pointer = false;
    // Optional qualifiers such as `.ptr .global .align 4`, before or after the type.
    let mut ty = None;
    let mut name = "";
    while i < words.len() {
        match words[i] {
            ".align" => i += 2,
            ".ptr" => {
                pointer = true;
                i += 1;
            }
            ".global" | ".const" | ".local" | ".shared" => i += 1,
            w if ty.is_none() => {
                ty = Some(w);
                i += 1;
            }
            w => {
                name = w;
                i += 1;
            }
        }
    }
    let ty = ty.and_then(|t| t.strip_prefix('.')).ok_or_else(|| format!("`{decl}` has no type"))?;
    let elem = scalar_bytes(ty).ok_or_else(|| format!("unknown parameter type `.{ty}` in `{decl}`"))?;
    if let (Some(open), true) = (name.find('['), name.ends_with(']')) {
        let n: usize = name[open + 1..name.len() - 1].parse().map_err(|_| format!("bad array length in `{decl}`"))?;
        return Ok(Param {
            name: name[..open].to_owned(),
            ty: format!("{ty}[{n}]"),
            bytes: elem * n,
            class: ParamClass::Aggregate,
        });
    }
    let class = if pointer { ParamClass::Pointer } else { scalar_class(ty) };
    Ok(Param { name: name.to_owned(), ty: ty.to_owned(), bytes: elem, class })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_shipped_kernels() {
        let sigs = parse(include_str!("../kernels/chain.ptx")).unwrap();
        let add = sigs.iter().find(|k| k.name == "add_f32").unwrap();
        assert_eq!(add.describe(), "4 parameters (u64, u64, u64, u32)");
        let noop = sigs.iter().find(|k| k.name == "noop").unwrap();
        assert!(noop.params.is_empty());
        assert_eq!(sigs.len(), 7);
    }

    #[test]
    fn reads_struct_params_and_rejects_garbage() {
        let s = parse(".visible .entry k(\n .param .align 8 .b8 k_param_0[24],\n .param .f64 x\n)\n{ ret; }").unwrap();
        assert_eq!(
            s[0].params[0],
            Param { name: "k_param_0".into(), ty: "b8[24]".into(), bytes: 24, class: ParamClass::Aggregate }
        );
        assert_eq!(s[0].params[1].bytes, 8);
        assert_eq!(s[0].params[1].class, ParamClass::Float);
        assert!(parse("__global__ void k() {}").is_err());
        assert!(parse(".entry k(.param .u64 a").is_err());
        assert!(parse(".entry k(.param .weird a)").is_err());
    }

    // Issue #13, item 4: parameters carry a type class, not just a size.
    #[test]
    fn reads_type_classes() {
        let s = parse(
            ".entry k(.param .f32 a, .param .u32 b, .param .s32 c, .param .b32 d, .param .u64 .ptr .global .align 4 e, .param .bf16 f, .param .pred g, .param .u64 .ptr.global.align 16 h)",
        )
        .unwrap();
        let classes: Vec<ParamClass> = s[0].params.iter().map(|p| p.class).collect();
        use ParamClass::*;
        assert_eq!(classes, [Float, Unsigned, Signed, Bits, Pointer, Float, Bits, Pointer]);
        assert_eq!(s[0].params[4].name, "e");
        assert_eq!(s[0].params[7].name, "h");
        assert_eq!(s[0].params[7].bytes, 8);
        assert!(!Float.accepts(Unsigned));
        assert!(!Unsigned.accepts(Signed));
        assert!(!Bits.accepts(Float));
        assert!(Unsigned.accepts(Pointer));
        assert!(!Pointer.accepts(Unsigned));
    }
}

//! A small PTX reader: the entry points of a module and their parameter lists, so that a
//! launch's arguments can be checked against the kernel's signature before the driver sees
//! them (on both the GPU and the simulated device).

/// One `.param` of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The PTX type, e.g. `u64`, `f32`, or `b8[24]` for a by-value struct.
    pub ty: String,
    /// Its size in bytes.
    pub bytes: usize,
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
    let words: Vec<&str> = decl.split_whitespace().collect();
    if words.first() != Some(&".param") {
        return Err(format!("`{decl}` is not a `.param` declaration"));
    }
    let mut i = 1;
    let mut align = None;
    // Optional state space qualifiers such as `.ptr .global .align 4`.
    while i < words.len() {
        match words[i] {
            ".align" => {
                align = words.get(i + 1).and_then(|a| a.parse::<usize>().ok());
                i += 2;
            }
            ".ptr" | ".global" | ".const" | ".local" | ".shared" => i += 1,
            _ => break,
        }
    }
    let ty = words.get(i).and_then(|t| t.strip_prefix('.')).ok_or_else(|| format!("`{decl}` has no type"))?;
    let elem = scalar_bytes(ty).ok_or_else(|| format!("unknown parameter type `.{ty}` in `{decl}`"))?;
    let name = words.get(i + 1).copied().unwrap_or("");
    if let (Some(open), true) = (name.find('['), name.ends_with(']')) {
        let n: usize = name[open + 1..name.len() - 1].parse().map_err(|_| format!("bad array length in `{decl}`"))?;
        let _ = align;
        return Ok(Param { ty: format!("{ty}[{n}]"), bytes: elem * n });
    }
    Ok(Param { ty: ty.to_owned(), bytes: elem })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_shipped_kernels() {
        let sigs = parse(crate::kernels::CHAIN_PTX).unwrap();
        let add = sigs.iter().find(|k| k.name == "add_f32").unwrap();
        assert_eq!(add.describe(), "4 parameters (u64, u64, u64, u32)");
        let noop = sigs.iter().find(|k| k.name == "noop").unwrap();
        assert!(noop.params.is_empty());
        assert_eq!(sigs.len(), 7);
    }

    #[test]
    fn reads_struct_params_and_rejects_garbage() {
        let s = parse(".visible .entry k(\n .param .align 8 .b8 k_param_0[24],\n .param .f64 x\n)\n{ ret; }").unwrap();
        assert_eq!(s[0].params[0], Param { ty: "b8[24]".into(), bytes: 24 });
        assert_eq!(s[0].params[1].bytes, 8);
        assert!(parse("__global__ void k() {}").is_err());
        assert!(parse(".entry k(.param .u64 a").is_err());
        assert!(parse(".entry k(.param .weird a)").is_err());
    }
}

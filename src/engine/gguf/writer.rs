//! Writing GGUF v3 files: typed metadata, a tensor directory and aligned tensor data.
//!
//! The layout is the one llama.cpp (gguf.cpp) and gguf-py agree on: magic, version, counts,
//! metadata (`key`, type id, value), tensor infos (name, dims in ggml order, ggml type id,
//! offset relative to the data section), zero padding up to `general.alignment`, then each
//! tensor's bytes, each padded to the alignment so the next offset is aligned. llama.cpp
//! insists that offsets follow one another in that padded order, and that
//! `general.alignment` is a u32; both are guaranteed here.
//!
//! Tensor data is streamed: the caller writes each tensor's bytes through a callback, so a
//! multi-gigabyte file never has to be held in memory.

use super::MetaValue;
use candle_core::quantized::GgmlDType;
use std::io::{self, Write};

const GGUF_MAGIC: &[u8; 4] = b"GGUF";
const GGUF_VERSION: u32 = 3;
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// One tensor's entry in the directory.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    pub dtype: GgmlDType,
    /// Dimensions in ggml order: `dims[0]` is the row length (`ne0`).
    pub dims: Vec<usize>,
}

impl TensorSpec {
    pub fn elem_count(&self) -> usize {
        self.dims.iter().product()
    }

    /// Bytes of data; the row length must be a multiple of the type's block size.
    pub fn size_bytes(&self) -> u64 {
        (self.elem_count() / self.dtype.block_size()) as u64 * self.dtype.type_size() as u64
    }
}

/// A GGUF file being described: metadata and tensors, in the order they will be written.
#[derive(Debug, Clone, Default)]
pub struct GgufWriter {
    metadata: Vec<(String, MetaValue)>,
    tensors: Vec<TensorSpec>,
}

impl GgufWriter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a metadata key.
    pub fn set(&mut self, key: &str, value: MetaValue) {
        match self.metadata.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.metadata.push((key.to_string(), value)),
        }
    }

    pub fn metadata(&self) -> &[(String, MetaValue)] {
        &self.metadata
    }

    /// Adds a tensor; names must be unique and the row length a multiple of the block size.
    pub fn add_tensor(&mut self, name: &str, dtype: GgmlDType, dims: &[usize]) -> io::Result<()> {
        if self.tensors.iter().any(|t| t.name == name) {
            return Err(invalid(format!("tensor {name} is added twice")));
        }
        if dims.is_empty() || dims.len() > 4 || dims.contains(&0) {
            return Err(invalid(format!("tensor {name} has dimensions {dims:?}")));
        }
        if !dims[0].is_multiple_of(dtype.block_size()) {
            return Err(invalid(format!(
                "tensor {name}: row length {} is not a multiple of the {dtype:?} block size {}",
                dims[0],
                dtype.block_size()
            )));
        }
        self.tensors.push(TensorSpec {
            name: name.to_string(),
            dtype,
            dims: dims.to_vec(),
        });
        Ok(())
    }

    pub fn tensors(&self) -> &[TensorSpec] {
        &self.tensors
    }

    /// `general.alignment` when set (it must be a power of two), else 32.
    pub fn alignment(&self) -> u64 {
        self.metadata
            .iter()
            .find(|(k, _)| k == "general.alignment")
            .and_then(|(_, v)| v.as_u64())
            .unwrap_or(DEFAULT_ALIGNMENT)
    }

    /// Bytes of tensor data, padding included.
    pub fn data_size(&self) -> u64 {
        let align = self.alignment();
        self.tensors
            .iter()
            .map(|t| t.size_bytes().div_ceil(align) * align)
            .sum()
    }

    /// Writes the file. `fill` is called once per tensor, in order, and must write exactly
    /// `spec.size_bytes()` bytes. Returns the number of bytes written.
    pub fn write<W: Write>(
        &self,
        out: W,
        mut fill: impl FnMut(&TensorSpec, &mut dyn Write) -> io::Result<()>,
    ) -> io::Result<u64> {
        let align = self.alignment();
        if !align.is_power_of_two() {
            return Err(invalid(format!(
                "general.alignment {align} is not a power of two"
            )));
        }
        if let Some((_, v)) = self.metadata.iter().find(|(k, _)| k == "general.alignment") {
            if !matches!(v, MetaValue::U32(_)) {
                // llama.cpp reads the alignment with gguf_get_val_u32, which asserts the type.
                return Err(invalid("general.alignment must be a u32".into()));
            }
        }
        let mut out = CountingWriter {
            inner: out,
            written: 0,
        };
        out.write_all(GGUF_MAGIC)?;
        out.write_all(&GGUF_VERSION.to_le_bytes())?;
        out.write_all(&(self.tensors.len() as u64).to_le_bytes())?;
        out.write_all(&(self.metadata.len() as u64).to_le_bytes())?;
        for (key, value) in &self.metadata {
            write_string(&mut out, key)?;
            out.write_all(&value_type(value)?.to_le_bytes())?;
            write_value(&mut out, value)?;
        }
        let mut offset = 0u64;
        for t in &self.tensors {
            write_string(&mut out, &t.name)?;
            out.write_all(&(t.dims.len() as u32).to_le_bytes())?;
            for &d in &t.dims {
                out.write_all(&(d as u64).to_le_bytes())?;
            }
            out.write_all(&ggml_type_id(t.dtype).to_le_bytes())?;
            out.write_all(&offset.to_le_bytes())?;
            offset += t.size_bytes().div_ceil(align) * align;
        }
        pad(&mut out, align)?;
        for t in &self.tensors {
            let before = out.written;
            fill(t, &mut out)?;
            let wrote = out.written - before;
            if wrote != t.size_bytes() {
                return Err(invalid(format!(
                    "tensor {}: {wrote} bytes written, {} expected",
                    t.name,
                    t.size_bytes()
                )));
            }
            pad(&mut out, align)?;
        }
        out.flush()?;
        Ok(out.written)
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

struct CountingWriter<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn pad<W: Write>(out: &mut CountingWriter<W>, align: u64) -> io::Result<()> {
    let padding = out.written.div_ceil(align) * align - out.written;
    out.write_all(&vec![0u8; padding as usize])
}

fn write_string(out: &mut dyn Write, s: &str) -> io::Result<()> {
    out.write_all(&(s.len() as u64).to_le_bytes())?;
    out.write_all(s.as_bytes())
}

/// GGUF's value type ids (gguf.h).
fn value_type(value: &MetaValue) -> io::Result<u32> {
    Ok(match value {
        MetaValue::U8(_) => 0,
        MetaValue::I8(_) => 1,
        MetaValue::U16(_) => 2,
        MetaValue::I16(_) => 3,
        MetaValue::U32(_) => 4,
        MetaValue::I32(_) => 5,
        MetaValue::F32(_) => 6,
        MetaValue::Bool(_) => 7,
        MetaValue::String(_) => 8,
        MetaValue::Array(_) => 9,
        MetaValue::U64(_) => 10,
        MetaValue::I64(_) => 11,
        MetaValue::F64(_) => 12,
    })
}

fn write_value(out: &mut dyn Write, value: &MetaValue) -> io::Result<()> {
    match value {
        MetaValue::U8(v) => out.write_all(&[*v]),
        MetaValue::I8(v) => out.write_all(&v.to_le_bytes()),
        MetaValue::U16(v) => out.write_all(&v.to_le_bytes()),
        MetaValue::I16(v) => out.write_all(&v.to_le_bytes()),
        MetaValue::U32(v) => out.write_all(&v.to_le_bytes()),
        MetaValue::I32(v) => out.write_all(&v.to_le_bytes()),
        MetaValue::F32(v) => out.write_all(&v.to_le_bytes()),
        MetaValue::Bool(v) => out.write_all(&[u8::from(*v)]),
        MetaValue::String(s) => write_string(out, s),
        MetaValue::U64(v) => out.write_all(&v.to_le_bytes()),
        MetaValue::I64(v) => out.write_all(&v.to_le_bytes()),
        MetaValue::F64(v) => out.write_all(&v.to_le_bytes()),
        MetaValue::Array(items) => {
            // An empty array still needs an item type; u32 is what gguf-py would pick.
            let item_type = match items.first() {
                Some(first) => value_type(first)?,
                None => 4,
            };
            for item in items {
                if value_type(item)? != item_type {
                    return Err(invalid("a GGUF array holds items of one type".into()));
                }
            }
            out.write_all(&item_type.to_le_bytes())?;
            out.write_all(&(items.len() as u64).to_le_bytes())?;
            items.iter().try_for_each(|item| write_value(out, item))
        }
    }
}

/// ggml's type ids (ggml.h), the inverse of the reader's table.
pub fn ggml_type_id(dtype: GgmlDType) -> u32 {
    match dtype {
        GgmlDType::F32 => 0,
        GgmlDType::F16 => 1,
        GgmlDType::Q4_0 => 2,
        GgmlDType::Q4_1 => 3,
        GgmlDType::Q5_0 => 6,
        GgmlDType::Q5_1 => 7,
        GgmlDType::Q8_0 => 8,
        GgmlDType::Q8_1 => 9,
        GgmlDType::Q2K => 10,
        GgmlDType::Q3K => 11,
        GgmlDType::Q4K => 12,
        GgmlDType::Q5K => 13,
        GgmlDType::Q6K => 14,
        GgmlDType::Q8K => 15,
        GgmlDType::BF16 => 30,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::gguf::GgufHeader;

    fn sample() -> GgufWriter {
        let mut w = GgufWriter::new();
        w.set("general.architecture", MetaValue::String("llama".into()));
        w.set("general.alignment", MetaValue::U32(32));
        w.set("a.u8", MetaValue::U8(7));
        w.set("a.i32", MetaValue::I32(-5));
        w.set("a.f32", MetaValue::F32(0.5));
        w.set("a.f64", MetaValue::F64(1e-6));
        w.set("a.bool", MetaValue::Bool(true));
        w.set("a.u64", MetaValue::U64(1 << 40));
        w.set(
            "a.strings",
            MetaValue::Array(vec![
                MetaValue::String("x".into()),
                MetaValue::String("yz".into()),
            ]),
        );
        w.set("a.empty", MetaValue::Array(vec![]));
        w.add_tensor("f32", GgmlDType::F32, &[3]).unwrap();
        w.add_tensor("q8", GgmlDType::Q8_0, &[64, 3]).unwrap();
        w.add_tensor("q4k", GgmlDType::Q4K, &[256, 2]).unwrap();
        w
    }

    fn write_to(w: &GgufWriter, path: &std::path::Path) -> u64 {
        let file = std::fs::File::create(path).unwrap();
        w.write(std::io::BufWriter::new(file), |t, out| {
            out.write_all(&vec![0x11u8; t.size_bytes() as usize])
        })
        .unwrap()
    }

    #[test]
    fn metadata_and_tensor_directory_round_trip_through_the_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.gguf");
        let w = sample();
        let written = write_to(&w, &path);
        let h = GgufHeader::read(&path).unwrap();
        assert_eq!(h.version, 3);
        assert_eq!(h.file_size, written);
        for (key, value) in w.metadata() {
            assert_eq!(h.get(key), Some(value), "{key}");
        }
        assert_eq!(h.tensors.len(), 3);
        for (spec, info) in w.tensors().iter().zip(&h.tensors) {
            assert_eq!(spec.name, info.name);
            assert_eq!(spec.dtype, info.dtype);
            assert_eq!(spec.dims, info.dims);
            assert_eq!(spec.size_bytes(), info.size_bytes);
            assert_eq!(info.offset % 32, 0, "{} is aligned", info.name);
        }
    }

    #[test]
    fn tensors_follow_one_another_in_padded_order_and_the_file_ends_aligned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.gguf");
        let w = sample();
        let written = write_to(&w, &path);
        let h = GgufHeader::read(&path).unwrap();
        let data_start = h.tensors[0].offset;
        let mut expected = data_start;
        for t in &h.tensors {
            assert_eq!(t.offset, expected, "{}", t.name);
            expected += t.size_bytes.div_ceil(32) * 32;
        }
        assert_eq!(written, expected);
        assert_eq!(written - data_start, w.data_size());
    }

    #[test]
    fn a_fill_that_writes_the_wrong_size_is_an_error() {
        let w = sample();
        let err = w
            .write(std::io::sink(), |_, out| out.write_all(&[0u8; 3]))
            .unwrap_err();
        assert!(err.to_string().contains("expected"), "{err}");
    }

    #[test]
    fn rows_must_fill_whole_blocks() {
        let mut w = GgufWriter::new();
        let err = w.add_tensor("bad", GgmlDType::Q4K, &[576, 2]).unwrap_err();
        assert!(err.to_string().contains("block size 256"), "{err}");
        assert!(w.add_tensor("dup", GgmlDType::F32, &[4]).is_ok());
        assert!(w.add_tensor("dup", GgmlDType::F32, &[4]).is_err());
    }

    #[test]
    fn alignment_must_be_a_u32() {
        let mut w = GgufWriter::new();
        w.set("general.alignment", MetaValue::U64(32));
        assert!(w.write(std::io::sink(), |_, _| Ok(())).is_err());
    }
}

//! Reading a GGUF file's header (metadata and tensor directory) safely and quickly.
//!
//! Files come from the internet, so nothing in the header is trusted: every length and count
//! is checked against the bytes that remain in the file *before* anything is allocated, and
//! every tensor must lie inside the file. Only the header is read here (milliseconds, also for
//! multi-gigabyte files); tensor data is mapped later by the model loader.

use candle_core::quantized::GgmlDType;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

const GGUF_MAGIC: &[u8; 4] = b"GGUF";
/// Nested arrays deeper than this are not something a real model writes.
const MAX_ARRAY_DEPTH: usize = 4;
/// ggml tensors have at most four dimensions.
const MAX_DIMS: u32 = 4;
const DEFAULT_ALIGNMENT: u64 = 32;

/// One metadata value, as typed in the file.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(Vec<MetaValue>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl MetaValue {
    /// Any integer type, widened; negative values are `None`.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            MetaValue::U8(v) => Some(v.into()),
            MetaValue::U16(v) => Some(v.into()),
            MetaValue::U32(v) => Some(v.into()),
            MetaValue::U64(v) => Some(v),
            MetaValue::I8(v) => u64::try_from(v).ok(),
            MetaValue::I16(v) => u64::try_from(v).ok(),
            MetaValue::I32(v) => u64::try_from(v).ok(),
            MetaValue::I64(v) => u64::try_from(v).ok(),
            MetaValue::Bool(_) | MetaValue::F32(_) | MetaValue::F64(_) => None,
            MetaValue::String(_) | MetaValue::Array(_) => None,
        }
    }

    /// Any numeric type as f64 (integers included: converters are not consistent).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            MetaValue::F32(v) => Some(v.into()),
            MetaValue::F64(v) => Some(v),
            MetaValue::I8(v) => Some(v.into()),
            MetaValue::I16(v) => Some(v.into()),
            MetaValue::I32(v) => Some(v.into()),
            MetaValue::I64(v) => Some(v as f64),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            MetaValue::Bool(b) => Some(b),
            _ => self.as_u64().map(|v| v != 0),
        }
    }

    pub fn as_array(&self) -> Option<&[MetaValue]> {
        match self {
            MetaValue::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// Where one tensor lives in the file and what it holds.
#[derive(Debug, Clone)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: GgmlDType,
    /// Dimensions in ggml order: `dims[0]` is the row length (`ne0`).
    pub dims: Vec<usize>,
    /// Absolute byte offset of the data in the file.
    pub offset: u64,
    pub size_bytes: u64,
}

impl TensorInfo {
    /// Dimensions in candle (row-major) order: outermost first.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().copied().collect()
    }

    pub fn elem_count(&self) -> usize {
        self.dims.iter().product()
    }
}

/// Everything in a GGUF file except the tensor data.
#[derive(Debug, Clone)]
pub struct GgufHeader {
    pub path: PathBuf,
    pub version: u32,
    pub file_size: u64,
    pub metadata: BTreeMap<String, MetaValue>,
    pub tensors: Vec<TensorInfo>,
}

/// A header that could not be read; the message names the file and the problem.
#[derive(Debug, thiserror::Error)]
pub struct GgufError {
    pub path: PathBuf,
    pub problem: String,
}

impl fmt::Display for GgufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

impl GgufHeader {
    /// Reads and validates the header of the GGUF file at `path`.
    pub fn read(path: &Path) -> Result<Self, GgufError> {
        let error = |problem: String| GgufError {
            path: path.to_path_buf(),
            problem,
        };
        let file = File::open(path).map_err(|e| error(format!("cannot open: {e}")))?;
        let file_size = file
            .metadata()
            .map_err(|e| error(format!("cannot read file size: {e}")))?
            .len();
        if file_size == 0 {
            return Err(error("the file is empty, not a GGUF model".into()));
        }
        let mut reader = HeaderReader {
            inner: BufReader::with_capacity(1 << 16, file),
            position: 0,
            file_size,
        };
        let mut header = reader.read_header().map_err(error)?;
        header.path = path.to_path_buf();
        Ok(header)
    }

    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.get(key)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(MetaValue::as_str)
    }

    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(MetaValue::as_u64)
    }

    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(MetaValue::as_f64)
    }

    pub fn get_array(&self, key: &str) -> Option<&[MetaValue]> {
        self.get(key).and_then(MetaValue::as_array)
    }

    /// `general.architecture`, the only source of truth for which implementation runs.
    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }

    /// A key under the architecture's namespace, e.g. `arch_key("block_count")`.
    pub fn arch_key(&self, suffix: &str) -> String {
        format!("{}.{suffix}", self.architecture().unwrap_or("unknown"))
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// A short name of the weights' quantization, from the most common matrix type.
    pub fn quantization(&self) -> String {
        let mut bytes_per_type: BTreeMap<String, u64> = BTreeMap::new();
        for t in self.tensors.iter().filter(|t| t.dims.len() >= 2) {
            *bytes_per_type.entry(format!("{:?}", t.dtype)).or_default() += t.size_bytes;
        }
        bytes_per_type
            .into_iter()
            .max_by_key(|(_, bytes)| *bytes)
            .map(|(name, _)| name.to_uppercase())
            .unwrap_or_else(|| "none".into())
    }

    pub fn parameter_count(&self) -> u64 {
        self.tensors.iter().map(|t| t.elem_count() as u64).sum()
    }
}

struct HeaderReader<R> {
    inner: R,
    position: u64,
    file_size: u64,
}

type ReadResult<T> = Result<T, String>;

impl<R: Read> HeaderReader<R> {
    fn remaining(&self) -> u64 {
        self.file_size.saturating_sub(self.position)
    }

    fn bytes<const N: usize>(&mut self) -> ReadResult<[u8; N]> {
        let mut buf = [0u8; N];
        self.inner.read_exact(&mut buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                format!("the file ends inside its header at byte {} (truncated?)", self.position)
            } else {
                format!("read error at byte {}: {e}", self.position)
            }
        })?;
        self.position += N as u64;
        Ok(buf)
    }

    fn u32(&mut self) -> ReadResult<u32> {
        self.bytes::<4>().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> ReadResult<u64> {
        self.bytes::<8>().map(u64::from_le_bytes)
    }

    /// A count of items each at least `min_item_bytes` long, checked against the rest of the file.
    fn count(&mut self, what: &str, min_item_bytes: u64) -> ReadResult<u64> {
        let n = self.u64()?;
        let needed = n.saturating_mul(min_item_bytes);
        if needed > self.remaining() {
            return Err(format!(
                "the header claims {n} {what}, more than the {} bytes left in the file could hold (corrupt or truncated)",
                self.remaining()
            ));
        }
        Ok(n)
    }

    fn string(&mut self) -> ReadResult<String> {
        let len = self.count("bytes of string", 1)?;
        let mut buf = vec![0u8; len as usize];
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| format!("read error at byte {}: {e}", self.position))?;
        self.position += len;
        // Some converters write a trailing NUL; GGUF strings are not NUL-terminated.
        while buf.last() == Some(&0) {
            buf.pop();
        }
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    fn read_header(&mut self) -> ReadResult<GgufHeader> {
        let magic = self
            .bytes::<4>()
            .map_err(|_| "too short to be a GGUF file".to_string())?;
        if &magic != GGUF_MAGIC {
            return Err(format!(
                "not a GGUF file (it starts with {:02x?}, a GGUF file starts with \"GGUF\")",
                magic
            ));
        }
        let version = self.u32()?;
        if !(2..=3).contains(&version) {
            return Err(format!(
                "GGUF version {version} is not supported (taper reads versions 2 and 3)"
            ));
        }
        // A tensor entry is at least: name length (8) + dims count (4) + type (4) + offset (8).
        let tensor_count = self.count("tensors", 24)?;
        // A metadata entry is at least: key length (8) + type (4) + one byte of value.
        let kv_count = self.count("metadata entries", 13)?;
        let mut metadata = BTreeMap::new();
        for _ in 0..kv_count {
            let key = self.string()?;
            let value_type = self.u32()?;
            let value = self
                .value(value_type, 0)
                .map_err(|e| format!("metadata key {key:?}: {e}"))?;
            metadata.insert(key, value);
        }
        let mut tensors = Vec::with_capacity(tensor_count as usize);
        for _ in 0..tensor_count {
            tensors.push(self.tensor_info()?);
        }
        let alignment = match metadata.get("general.alignment").and_then(MetaValue::as_u64) {
            Some(a) if a.is_power_of_two() => a,
            Some(a) => return Err(format!("general.alignment {a} is not a power of two")),
            None => DEFAULT_ALIGNMENT,
        };
        let data_offset = self.position.div_ceil(alignment) * alignment;
        for t in &mut tensors {
            let start = data_offset.checked_add(t.offset);
            let end = start.and_then(|s| s.checked_add(t.size_bytes));
            match (start, end) {
                (Some(start), Some(end)) if end <= self.file_size => t.offset = start,
                _ => {
                    return Err(format!(
                        "tensor {:?} lies past the end of the file ({} bytes): the file is truncated",
                        t.name, self.file_size
                    ))
                }
            }
        }
        Ok(GgufHeader {
            path: PathBuf::new(),
            version,
            file_size: self.file_size,
            metadata,
            tensors,
        })
    }

    fn value(&mut self, value_type: u32, depth: usize) -> ReadResult<MetaValue> {
        Ok(match value_type {
            0 => MetaValue::U8(self.bytes::<1>()?[0]),
            1 => MetaValue::I8(self.bytes::<1>()?[0] as i8),
            2 => MetaValue::U16(u16::from_le_bytes(self.bytes()?)),
            3 => MetaValue::I16(i16::from_le_bytes(self.bytes()?)),
            4 => MetaValue::U32(self.u32()?),
            5 => MetaValue::I32(i32::from_le_bytes(self.bytes()?)),
            6 => MetaValue::F32(f32::from_le_bytes(self.bytes()?)),
            7 => MetaValue::Bool(self.bytes::<1>()?[0] != 0),
            8 => MetaValue::String(self.string()?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err("arrays nested too deeply".into());
                }
                let item_type = self.u32()?;
                let min_size = match item_type {
                    0 | 1 | 7 => 1,
                    2 | 3 => 2,
                    4..=6 => 4,
                    8 => 8,
                    9 => 12,
                    10..=12 => 8,
                    other => return Err(format!("unknown value type {other}")),
                };
                let n = self.count("array elements", min_size)?;
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(self.value(item_type, depth + 1)?);
                }
                MetaValue::Array(items)
            }
            10 => MetaValue::U64(self.u64()?),
            11 => MetaValue::I64(i64::from_le_bytes(self.bytes()?)),
            12 => MetaValue::F64(f64::from_le_bytes(self.bytes()?)),
            other => return Err(format!("unknown value type {other}")),
        })
    }

    fn tensor_info(&mut self) -> ReadResult<TensorInfo> {
        let name = self.string()?;
        let n_dims = self.u32()?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(format!("tensor {name:?} has {n_dims} dimensions"));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            let d = self.u64()?;
            dims.push(usize::try_from(d).map_err(|_| format!("tensor {name:?} is too large"))?);
        }
        let type_id = self.u32()?;
        let dtype = ggml_dtype(type_id).ok_or_else(|| {
            format!("tensor {name:?} has ggml type {type_id}, which taper cannot load")
        })?;
        let offset = self.u64()?;
        let elems = dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
            .ok_or_else(|| format!("tensor {name:?} claims an impossible size"))?;
        let block = dtype.block_size() as u64;
        if dims[0] as u64 % block != 0 {
            return Err(format!(
                "tensor {name:?}: row length {} is not a multiple of the {dtype:?} block size {block}",
                dims[0]
            ));
        }
        let size_bytes = (elems / block)
            .checked_mul(dtype.type_size() as u64)
            .ok_or_else(|| format!("tensor {name:?} claims an impossible size"))?;
        Ok(TensorInfo {
            name,
            dtype,
            dims,
            offset,
            size_bytes,
        })
    }
}

/// ggml's type ids (ggml.h) for the types candle can compute with.
fn ggml_dtype(id: u32) -> Option<GgmlDType> {
    Some(match id {
        0 => GgmlDType::F32,
        1 => GgmlDType::F16,
        2 => GgmlDType::Q4_0,
        3 => GgmlDType::Q4_1,
        6 => GgmlDType::Q5_0,
        7 => GgmlDType::Q5_1,
        8 => GgmlDType::Q8_0,
        9 => GgmlDType::Q8_1,
        10 => GgmlDType::Q2K,
        11 => GgmlDType::Q3K,
        12 => GgmlDType::Q4K,
        13 => GgmlDType::Q5K,
        14 => GgmlDType::Q6K,
        15 => GgmlDType::Q8K,
        30 => GgmlDType::BF16,
        _ => return None,
    })
}

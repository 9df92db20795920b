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

mod reader;
mod value;
pub mod writer;

pub use value::MetaValue;

/// The path a header parsed from memory ([`GgufHeader::parse_bytes`]) reports.
pub const IN_MEMORY: &str = "(in-memory GGUF)";

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
        let mut header =
            Self::read_from(BufReader::with_capacity(1 << 16, file), file_size).map_err(error)?;
        header.path = path.to_path_buf();
        Ok(header)
    }

    /// Reads and validates a header from a whole GGUF file held in memory (tensor data
    /// included, since every tensor must lie inside the file). Errors name the file as
    /// [`IN_MEMORY`].
    pub fn parse_bytes(bytes: &[u8]) -> Result<Self, GgufError> {
        let mut header =
            Self::read_from(bytes, bytes.len() as u64).map_err(|problem| GgufError {
                path: PathBuf::from(IN_MEMORY),
                problem,
            })?;
        header.path = PathBuf::from(IN_MEMORY);
        Ok(header)
    }

    fn read_from(inner: impl Read, file_size: u64) -> Result<Self, String> {
        if file_size == 0 {
            return Err("the file is empty, not a GGUF model".into());
        }
        reader::HeaderReader::new(inner, file_size).read_header()
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

    /// A short name of the weights' quantization: llama.cpp's file type (`Q4_K_M`) when the
    /// file says, else the type holding most bytes of the layers' matrices.
    pub fn quantization(&self) -> String {
        if let Some(name) = self.get_u64("general.file_type").and_then(file_type_name) {
            return name.to_string();
        }
        let mut bytes_per_type: BTreeMap<String, u64> = BTreeMap::new();
        let in_layers = |t: &&TensorInfo| t.dims.len() >= 2 && t.name.starts_with("blk.");
        for t in self.tensors.iter().filter(in_layers) {
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

/// llama.cpp's `llama_ftype` names (the "mostly" types a quantized file declares).
fn file_type_name(id: u64) -> Option<&'static str> {
    Some(match id {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        32 => "BF16",
        _ => return None,
    })
}

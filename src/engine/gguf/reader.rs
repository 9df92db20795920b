//! The byte-level header parser: every length is checked against what is left of the file.

use super::{GgufHeader, MetaValue, TensorInfo};
use candle_core::quantized::GgmlDType;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

const GGUF_MAGIC: &[u8; 4] = b"GGUF";
/// Nested arrays deeper than this are not something a real model writes.
const MAX_ARRAY_DEPTH: usize = 4;
/// ggml tensors have at most four dimensions.
const MAX_DIMS: u32 = 4;
const DEFAULT_ALIGNMENT: u64 = 32;
/// Real models have a few hundred to a few thousand tensors. The file-size check alone is
/// no bound here: a multi-gigabyte file has room for millions of 24-byte entries.
const MAX_TENSORS: u64 = 1 << 16;
/// Memory the parsed metadata and tensor names may take. A 262k-token vocabulary (tokens,
/// scores and types) needs about 30 MB; the file-size check alone would let a header in a
/// multi-gigabyte file claim arrays that take 32 bytes of memory per byte of file.
const MAX_HEADER_MEMORY: u64 = 512 << 20;
/// Tensors reserved up front; more are added as they are actually read.
const TENSORS_RESERVED: u64 = 4096;

pub(super) struct HeaderReader<R> {
    inner: R,
    position: u64,
    file_size: u64,
    /// Bytes of memory the header may still take (see [`MAX_HEADER_MEMORY`]).
    memory_left: u64,
}

type ReadResult<T> = Result<T, String>;

impl<R: Read> HeaderReader<R> {
    pub(super) fn new(inner: R, file_size: u64) -> Self {
        Self {
            inner,
            position: 0,
            file_size,
            memory_left: MAX_HEADER_MEMORY,
        }
    }

    /// Accounts for `bytes` of memory about to be allocated, refusing before the allocation
    /// when the header would take more than [`MAX_HEADER_MEMORY`].
    fn charge(&mut self, bytes: u64, what: &str) -> ReadResult<()> {
        match self.memory_left.checked_sub(bytes) {
            Some(left) => {
                self.memory_left = left;
                Ok(())
            }
            None => Err(format!(
                "the header's {what} would need more than {} MiB of memory; no model needs that much (corrupt or hostile file)",
                MAX_HEADER_MEMORY >> 20
            )),
        }
    }

    fn remaining(&self) -> u64 {
        self.file_size.saturating_sub(self.position)
    }

    fn bytes<const N: usize>(&mut self) -> ReadResult<[u8; N]> {
        let mut buf = [0u8; N];
        self.inner.read_exact(&mut buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                format!(
                    "the file ends inside its header at byte {} (truncated?)",
                    self.position
                )
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
        self.charge(len, "strings")?;
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

    pub(super) fn read_header(&mut self) -> ReadResult<GgufHeader> {
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
        if tensor_count > MAX_TENSORS {
            return Err(format!(
                "the header claims {tensor_count} tensors; taper reads at most {MAX_TENSORS} (corrupt or hostile file)"
            ));
        }
        // A metadata entry is at least: key length (8) + type (4) + one byte of value.
        let kv_count = self.count("metadata entries", 13)?;
        let mut metadata = BTreeMap::new();
        for _ in 0..kv_count {
            // The map's entry itself; a string's or array's contents are charged as read.
            self.charge(
                (size_of::<String>() + size_of::<MetaValue>()) as u64,
                "metadata entries",
            )?;
            let key = self.string()?;
            let value_type = self.u32()?;
            let value = self
                .value(value_type, 0)
                .map_err(|e| format!("metadata key {key:?}: {e}"))?;
            metadata.insert(key, value);
        }
        let mut tensors = Vec::with_capacity(tensor_count.min(TENSORS_RESERVED) as usize);
        for _ in 0..tensor_count {
            self.charge(size_of::<TensorInfo>() as u64, "tensor directory")?;
            tensors.push(self.tensor_info()?);
        }
        let alignment = match metadata
            .get("general.alignment")
            .and_then(MetaValue::as_u64)
        {
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
                self.charge(
                    n.saturating_mul(size_of::<MetaValue>() as u64),
                    "metadata arrays",
                )?;
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
        if !(dims[0] as u64).is_multiple_of(block) {
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

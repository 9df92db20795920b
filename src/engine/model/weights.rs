//! Tensors of a GGUF file, read from a memory map into candle's quantized storage.

use crate::engine::gguf::{GgufHeader, TensorInfo};
use anyhow::{anyhow, Context, Result};
use candle_core::quantized::{GgmlDType, QMatMul, QStorage, QTensor};
use candle_core::{Device, Tensor};
use memmap2::Mmap;
use std::borrow::Cow;
use std::fs::File;
use std::sync::Arc;

/// The open file, mapped; tensors are copied out of it on request.
pub struct WeightFile<'h> {
    header: &'h GgufHeader,
    map: Mmap,
}

impl<'h> WeightFile<'h> {
    pub fn open(header: &'h GgufHeader) -> Result<Self> {
        let file = File::open(&header.path)
            .with_context(|| format!("{}: cannot open", header.path.display()))?;
        // SAFETY: the map is read-only and private to this loader. If another process
        // truncates the file while we read it, the process gets SIGBUS: the same risk every
        // mmap-based model loader (llama.cpp included) accepts.
        let map = unsafe { Mmap::map(&file) }
            .with_context(|| format!("{}: cannot map the file", header.path.display()))?;
        if (map.len() as u64) < header.file_size {
            anyhow::bail!("{}: the file shrank while loading", header.path.display());
        }
        Ok(Self { header, map })
    }

    pub fn has(&self, name: &str) -> bool {
        self.header.tensor(name).is_some()
    }

    fn info(&self, name: &str) -> Result<&TensorInfo> {
        self.header
            .tensor(name)
            .ok_or_else(|| anyhow!("tensor {name} is missing"))
    }

    /// The tensor as stored (quantized or not).
    pub fn qtensor(&self, name: &str) -> Result<Arc<QTensor>> {
        let info = self.info(name)?;
        let start = info.offset as usize;
        let bytes = &self.map[start..start + info.size_bytes as usize];
        // candle reinterprets the bytes as blocks and requires their alignment; a file with an
        // odd `general.alignment` gets an aligned copy instead of a panic.
        if (bytes.as_ptr() as usize).is_multiple_of(8) {
            return self.qtensor_from(info, bytes);
        }
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        let view = bytemuck_bytes_mut(&mut words);
        view[..bytes.len()].copy_from_slice(bytes);
        self.qtensor_from(info, &view[..bytes.len()])
    }

    fn qtensor_from(&self, info: &TensorInfo, bytes: &[u8]) -> Result<Arc<QTensor>> {
        let storage = QStorage::from_data(Cow::Borrowed(bytes), &Device::Cpu, info.dtype)?;
        let tensor =
            QTensor::new(storage, info.shape()).with_context(|| format!("tensor {}", info.name))?;
        Ok(Arc::new(tensor))
    }

    /// A matrix for `x · Wᵀ`, checked to be `[cols_in, rows_out]` in ggml order.
    pub fn matrix(&self, name: &str, cols_in: usize, rows_out: usize) -> Result<QMatMul> {
        self.expect_dims(name, &[cols_in, rows_out])?;
        Ok(QMatMul::from_arc(self.qtensor(name)?)?)
    }

    /// A 1-D f32 vector (norm weights, biases, rope factors).
    pub fn vector(&self, name: &str, len: usize) -> Result<Tensor> {
        self.expect_dims(name, &[len])?;
        Ok(self.qtensor(name)?.dequantize(&Device::Cpu)?)
    }

    pub fn optional_vector(&self, name: &str, len: usize) -> Result<Option<Tensor>> {
        if self.has(name) {
            self.vector(name, len).map(Some)
        } else {
            Ok(None)
        }
    }

    pub fn expect_dims(&self, name: &str, dims: &[usize]) -> Result<()> {
        let info = self.info(name)?;
        if info.dims != dims {
            anyhow::bail!("tensor {name} has shape {:?}, expected {dims:?}", info.dims);
        }
        Ok(())
    }

    pub fn dtype(&self, name: &str) -> Option<GgmlDType> {
        self.header.tensor(name).map(|t| t.dtype)
    }
}

fn bytemuck_bytes_mut(words: &mut [u64]) -> &mut [u8] {
    // SAFETY: u64 has no padding and any byte pattern is a valid u8; the length covers
    // exactly the words' memory.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8) }
}

//! Embedding tables looked up row by row, straight from the mapped file.
//!
//! A 262k-token vocabulary is hundreds of megabytes dequantized (and Gemma 4's per-layer
//! table is billions of values), yet a forward pass reads one row per token: rows stay
//! quantized in the map and only the ones looked up are dequantized.

use super::linear::QLinear;
use super::mapped::{qstorage, MappedBytes, WeightFile};
use crate::engine::model::kernels::{packed::q8_0_x16, QK};
use anyhow::{bail, Context, Result};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Device;

/// As `WeightFile::linear`, the table is built here rather than in the mapped file.
impl WeightFile<'_> {
    /// An embedding table `[row_len, rows]`, whose rows are dequantized when looked up.
    pub fn rows(&self, name: &str, row_len: usize, rows: usize) -> Result<RowTable> {
        self.expect_dims(name, &[row_len, rows])?;
        let info = self.info(name)?;
        RowTable::new(self.bytes(info)?, info.dtype, row_len, rows)
            .with_context(|| format!("tensor {name}"))
    }
}

pub struct RowTable {
    bytes: MappedBytes,
    dtype: GgmlDType,
    row_len: usize,
    rows: usize,
    row_bytes: usize,
}

impl RowTable {
    pub fn new(bytes: MappedBytes, dtype: GgmlDType, row_len: usize, rows: usize) -> Result<Self> {
        let block = dtype.block_size();
        if !row_len.is_multiple_of(block) {
            bail!("rows of {row_len} values do not split into {dtype:?} blocks of {block}");
        }
        let row_bytes = row_len / block * dtype.type_size();
        if bytes.len() < row_bytes * rows {
            bail!(
                "{} bytes are too few for {rows} rows of {row_len} {dtype:?} values",
                bytes.len()
            );
        }
        Ok(Self {
            bytes,
            dtype,
            row_len,
            rows,
            row_bytes,
        })
    }

    /// The rows of `ids`, dequantized, one after another (`ids.len() × row_len`).
    pub fn lookup(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let mut out = Vec::with_capacity(ids.len() * self.row_len);
        for &id in ids {
            let id = id as usize;
            if id >= self.rows {
                bail!("row {id} is outside the table ({} rows)", self.rows);
            }
            let raw = &self.bytes[id * self.row_bytes..(id + 1) * self.row_bytes];
            self.dequantize_into(raw, &mut out)?;
        }
        Ok(out)
    }

    fn dequantize_into(&self, raw: &[u8], out: &mut Vec<f32>) -> Result<()> {
        if self.dtype == GgmlDType::F32 {
            out.extend(
                raw.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
            return Ok(());
        }
        let row = QTensor::new(qstorage(raw, self.dtype)?, (self.row_len,))?;
        out.extend(row.dequantize(&Device::Cpu)?.to_vec1::<f32>()?);
        Ok(())
    }
}

/// The rows of `ids` of a tied output head repacked as Q8_0×16 (`rows` rows of `row_len`
/// values), dequantized as [`RowTable::lookup`] would from the file: the same values, without
/// mapping the file's copy of the matrix back in, a page and its neighbours per token.
pub fn lookup_packed_q8_0(
    head: &QLinear,
    row_len: usize,
    rows: usize,
    ids: &[u32],
) -> Result<Vec<f32>> {
    let Some(packed) = head.q8_0_x16() else {
        bail!("the output head is not repacked Q8_0");
    };
    let mut out = Vec::with_capacity(ids.len() * row_len);
    for &id in ids {
        let id = id as usize;
        if id >= rows {
            bail!("row {id} is outside the table ({rows} rows)");
        }
        q8_0_x16::dequantize_row(packed, row_len / QK, id, &mut out);
    }
    Ok(out)
}

//! `QLinear`: `y = x · Wᵀ` over a quantized weight matrix, with our own kernels.
//!
//! Why not candle's `QMatMul`: it has no SIMD for Q4_1/Q5_0, does not reuse a weight block
//! across the rows of a prefill, and its thread pool spin-waits, which collapses decode speed
//! when another busy thread shares a core. Here the weights stay as ggml blocks (read in place
//! from the mapped file), activations are quantized per row ([`kernels`]), and the output columns are
//! split over rayon's global pool, whose idle workers sleep.
//!
//! On x86's SIMD paths, Q4_K, Q5_K, Q6_K, Q5_0, Q4_1 and Q8_0 matrices are repacked sixteen
//! rows at a time when the layer is built ([`kernels::packed`], chosen by [`Isa::packed_layout`] from the
//! format table): their kernels then share every unpacked weight and float step across
//! sixteen (AVX2: eight) rows.
//!
//! Formats without a kernel of ours (F32, F16, BF16, Q5_1, Q2_K, Q3_K, and Q5_K off x86's SIMD
//! paths, ...) go through candle's `QMatMul`, as before.
//!
//! Batch invariance: a row's result depends only on that row (same quantization, same kernel
//! arithmetic whether it is computed in a group of 4 or alone), never on how many rows there
//! are or how the columns were split between threads.
//!
//! `TAPER_KERNELS=candle` (every matrix through `QMatMul`), `=scalar` (no SIMD) or `=avx2` (no
//! AVX-512) is read once, for comparisons ([`kernel_path`]). `=exact` is the reference the others are measured
//! against (`taper perplexity`): every matrix dequantized to f32 at load and multiplied by f32
//! activations, with no 8-bit requantization anywhere; slow and four to eight times the memory.

use super::mapped::{MappedBytes, WeightFile};
use super::matmul::{quantized_matmul, Mat};
use super::pages::Arena;
use super::repack::{repacked, Cached, WeightBytes};
use crate::engine::model::kernels::{Format, Isa, Layout, Q8Block, Q8KBlock, Q8KLayout, Q8Layout};
use crate::engine::model::runtime::kernel_path::{self, Forced};
use crate::engine::model::runtime::scratch::{PassScratch, Pooled};
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Result, Tensor};
use std::sync::Arc;

pub struct QLinear {
    imp: Imp,
    in_dim: usize,
    out_dim: usize,
}

enum Imp {
    Native {
        weights: WeightBytes,
        layout: Layout,
    },
    Candle(QMatMul),
}

/// Our kernels' format for `dtype`, if there are kernels for it on this path (in ggml's
/// layout, or in a repacked one the path runs) and rows of `in_dim` split into its blocks.
fn native_format(dtype: GgmlDType, in_dim: usize) -> Option<Format> {
    Format::from_dtype(dtype)
        .filter(|f| in_dim.is_multiple_of(f.spec().block_elems))
        .filter(|f| f.spec().ggml.is_some() || kernel_path::isa().packed_layout(*f).is_some())
        .filter(|_| !matches!(kernel_path::forced(), Forced::Candle | Forced::Exact))
}

/// The matrix as candle computes it: as stored, or (the exact path) dequantized to f32, so no
/// activation is ever requantized.
fn candle_matmul(tensor: Arc<QTensor>) -> Result<QMatMul> {
    if kernel_path::forced() == Forced::Exact && tensor.dtype() != GgmlDType::F32 {
        return Ok(QMatMul::Tensor(tensor.dequantize(&Device::Cpu)?));
    }
    QMatMul::from_arc(tensor)
}

/// Building a layer from the file belongs with the layer, so that the mapped file knows
/// nothing of what is built on it.
impl WeightFile<'_> {
    /// A linear layer `y = x · Wᵀ` over the matrix `name`, checked to be `[cols_in, rows_out]`
    /// in ggml order. Formats our kernels compute are read in place from the map.
    pub fn linear(&self, name: &str, cols_in: usize, rows_out: usize) -> anyhow::Result<QLinear> {
        self.expect_dims(name, &[cols_in, rows_out])?;
        let info = self.info(name)?;
        let cached = self.packed_cache().map(|cache| (cache, name));
        let bytes = self.bytes(info)?;
        let arena = self.arena();
        if let Some(linear) =
            QLinear::from_mapped(bytes, info.dtype, cols_in, rows_out, arena, cached)
        {
            return Ok(linear);
        }
        Ok(QLinear::from_arc(self.qtensor(info)?)?)
    }
}

impl QLinear {
    /// A linear layer over a `(out, in)` matrix.
    pub fn from_arc(tensor: Arc<QTensor>) -> Result<Self> {
        let (out_dim, in_dim) = tensor.shape().dims2()?;
        let native = match native_format(tensor.dtype(), in_dim) {
            Some(format) => {
                let data = tensor.data()?;
                let arena = Arena::new(data.len());
                match (
                    repacked(&data, format, out_dim, |_| {}, &arena, None),
                    format.spec().ggml,
                ) {
                    (Some(packed), _) => Some(packed?),
                    (None, Some(ggml)) => Some((WeightBytes::Owned(data.into_owned()), ggml)),
                    // Only a repacked layout has kernels, and this matrix was not repacked.
                    (None, None) => None,
                }
            }
            None => None,
        };
        let imp = match native {
            Some((weights, layout)) => Imp::Native { weights, layout },
            None => Imp::Candle(candle_matmul(tensor)?),
        };
        Ok(Self {
            imp,
            in_dim,
            out_dim,
        })
    }

    /// A layer computed by our kernels straight from the mapped `(out, in)` matrix (or its
    /// repacked copy, read back from the repack cache when `cached` names it there), or `None`
    /// when the format has no kernel of ours (or they are switched off).
    pub(super) fn from_mapped(
        bytes: MappedBytes,
        dtype: GgmlDType,
        in_dim: usize,
        out_dim: usize,
        arena: &Arena,
        cached: Cached,
    ) -> Option<Self> {
        let format = native_format(dtype, in_dim)?;
        // A layer that cannot get memory for its repacked copy keeps reading the file.
        let hand_back = |part| bytes.release_part(part);
        let (weights, layout) = match repacked(&bytes, format, out_dim, hand_back, arena, cached)
            .and_then(|r| r.ok())
        {
            Some(packed) => {
                bytes.release();
                packed
            }
            // Only a repacked layout has kernels, and this matrix was not repacked: candle
            // computes it.
            None => (WeightBytes::Mapped(bytes), format.spec().ggml?),
        };
        Some(Self {
            imp: Imp::Native { weights, layout },
            in_dim,
            out_dim,
        })
    }

    /// Takes over what the weight loader built: quantized tensors get our kernels, anything
    /// candle already dequantized stays with candle.
    pub fn from_qmatmul(m: QMatMul) -> Result<Self> {
        match m {
            QMatMul::QTensor(t) => Self::from_arc(t),
            QMatMul::Tensor(ref w) | QMatMul::TensorF16(ref w) => {
                let (out_dim, in_dim) = w.dims2()?;
                Ok(Self {
                    imp: Imp::Candle(m),
                    in_dim,
                    out_dim,
                })
            }
        }
    }

    pub fn in_dim(&self) -> usize {
        self.in_dim
    }

    pub fn out_dim(&self) -> usize {
        self.out_dim
    }

    /// Whether our kernels (not candle's) compute this layer.
    pub fn is_native(&self) -> bool {
        matches!(self.imp, Imp::Native { .. })
    }

    /// The weights when they are Q8_0 repacked sixteen rows at a time
    /// ([`kernels::packed::q8_0_x16`]).
    pub fn q8_0_x16(&self) -> Option<&[u8]> {
        match &self.imp {
            Imp::Native { weights, layout } if *layout == Layout::Q8(Q8Layout::Q8_0X16) => {
                Some(weights.as_slice())
            }
            _ => None,
        }
    }

    /// `x` is `(..., in)` f32; returns `(..., out)`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Imp::Candle(m) = &self.imp {
            return m.forward(x);
        }
        let dims = x.dims().to_vec();
        match dims.last() {
            Some(&k) if k == self.in_dim => {}
            _ => candle_core::bail!(
                "QLinear: input shape {dims:?} does not end in {}",
                self.in_dim
            ),
        }
        let rows = x.elem_count() / self.in_dim;
        let xs = x
            .to_dtype(DType::F32)?
            .contiguous()?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let y = self.forward_rows_with(kernel_path::isa(), &xs, rows)?;
        let mut out_dims = dims;
        *out_dims.last_mut().expect("checked above") = self.out_dim;
        Tensor::from_vec(y, out_dims, &Device::Cpu)
    }

    /// `x` is `rows × in` row-major; returns `rows × out` row-major, with the best kernels.
    pub fn forward_rows(&self, x: &[f32], rows: usize) -> Result<Vec<f32>> {
        self.forward_rows_with(kernel_path::isa(), x, rows)
    }

    /// As [`Self::forward_rows`] with a chosen implementation (tests run every one).
    pub fn forward_rows_with(&self, isa: Isa, x: &[f32], rows: usize) -> Result<Vec<f32>> {
        let scratch = PassScratch::default();
        let y = self.forward_rows_in(&scratch, isa, x, rows)?;
        Ok(y.into_vec())
    }

    /// As [`Self::forward_rows_with`], the result and the quantized input in `scratch`'s
    /// buffers (a model's passes reuse them).
    pub fn forward_rows_in<'s>(
        &self,
        scratch: &'s PassScratch,
        isa: Isa,
        x: &[f32],
        rows: usize,
    ) -> Result<Pooled<'s, f32>> {
        match &self.imp {
            Imp::Candle(m) => {
                if x.len() != rows * self.in_dim {
                    candle_core::bail!(
                        "QLinear: {} inputs are not {rows} rows of {}",
                        x.len(),
                        self.in_dim
                    );
                }
                let xt = Tensor::from_slice(x, (rows, self.in_dim), &Device::Cpu)?;
                let y = m.forward(&xt)?.flatten_all()?.to_vec1::<f32>()?;
                Ok(scratch.floats.adopt(y))
            }
            Imp::Native { .. } => {
                let mut ys = forward_group_in(scratch, isa, &[self], x, rows)?;
                Ok(ys.pop().unwrap_or_else(|| scratch.floats.take(0)))
            }
        }
    }

    /// The blocks of a native layer, checked against its shape, with their format.
    fn native(&self) -> Result<Option<Mat<'_, Layout>>> {
        let Imp::Native { weights, layout } = &self.imp else {
            return Ok(None);
        };
        let nb = self.in_dim / layout.block_elems();
        let row_bytes = nb * layout.block_bytes();
        let data = weights.as_slice();
        // Rows stored in groups come padded to whole groups.
        let stored = row_bytes * self.out_dim.next_multiple_of(layout.row_group());
        if data.len() < stored {
            candle_core::bail!("QLinear: weight data is shorter than its shape");
        }
        Ok(Some(Mat {
            w: &data[..stored],
            layout: *layout,
            out: self.out_dim,
            row_bytes,
        }))
    }
}

/// Several layers over the same input (Q, K and V; gate and up), each `rows × in` → `rows ×
/// out`: the input is quantized once and the columns of all of them are shared out between the
/// threads in one go, so a decode step wakes the thread pool once instead of three times.
/// Layers whose formats cannot share a quantization are computed one after another.
pub fn forward_rows_group(layers: &[&QLinear], x: &[f32], rows: usize) -> Result<Vec<Vec<f32>>> {
    let scratch = PassScratch::default();
    let ys = forward_group_in(&scratch, kernel_path::isa(), layers, x, rows)?;
    Ok(ys.into_iter().map(Pooled::into_vec).collect())
}

/// As [`forward_rows_group`], the results and the quantized input in `scratch`'s buffers.
pub fn forward_group_in<'s>(
    scratch: &'s PassScratch,
    isa: Isa,
    layers: &[&QLinear],
    x: &[f32],
    rows: usize,
) -> Result<Vec<Pooled<'s, f32>>> {
    for l in layers {
        if x.len() != rows * l.in_dim {
            candle_core::bail!(
                "QLinear: {} inputs are not {rows} rows of {}",
                x.len(),
                l.in_dim
            );
        }
    }
    let mats = layers
        .iter()
        .map(|l| l.native())
        .collect::<Result<Option<Vec<Mat<Layout>>>>>()?;
    let (q8, q8k) = match &mats {
        Some(mats) if !mats.is_empty() => typed(mats),
        Some(_) => return Ok(Vec::new()),
        None => (None, None),
    };
    if rows == 0 && (q8.is_some() || q8k.is_some()) {
        return Ok(layers.iter().map(|_| scratch.floats.take(0)).collect());
    }
    let k = layers.first().map_or(0, |l| l.in_dim);
    match (q8, q8k) {
        (_, Some(mats)) => Ok(quantized_matmul::<Q8KBlock>(
            scratch, isa, &mats, x, rows, k,
        )),
        (Some(mats), None) => Ok(quantized_matmul::<Q8Block>(scratch, isa, &mats, x, rows, k)),
        // Formats that cannot share a quantization (or candle's layers): one at a time.
        (None, None) => layers
            .iter()
            .map(|l| l.forward_rows_in(scratch, isa, x, rows))
            .collect(),
    }
}

/// The matrices as ones that all take 8-bit 32-element activations, or all k-quant ones: one
/// quantization of the input then serves every one of them.
#[allow(clippy::type_complexity)]
fn typed<'a>(
    mats: &[Mat<'a, Layout>],
) -> (
    Option<Vec<Mat<'a, Q8Layout>>>,
    Option<Vec<Mat<'a, Q8KLayout>>>,
) {
    let q8 = mats
        .iter()
        .map(|m| match m.layout {
            Layout::Q8(l) => Some(m.with_layout(l)),
            Layout::Q8K(_) => None,
        })
        .collect();
    let q8k = mats
        .iter()
        .map(|m| match m.layout {
            Layout::Q8K(l) => Some(m.with_layout(l)),
            Layout::Q8(_) => None,
        })
        .collect();
    (q8, q8k)
}

impl Module for QLinear {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        QLinear::forward(self, x)
    }
}

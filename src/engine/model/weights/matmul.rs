//! The column-parallel quantized matmul behind [`super::linear::QLinear`]: activation rows
//! quantized once ([`ActivationBlock`]: Q8 or Q8_K blocks), the output columns of one or
//! several weight matrices split into chunks that rayon's pool runs (its idle workers sleep),
//! each chunk computed by the kernels eight or four activation rows at a time and written
//! straight into its piece of the row-major output.

use crate::engine::model::kernels::{self, Isa, Layout, Q8Block, Q8KBlock, Q8KLayout, Q8Layout};
use crate::engine::model::runtime::scratch::{BufferPool, PassScratch, Pooled};
use rayon::prelude::*;

/// Below this many multiply-adds a matmul runs on the calling thread, and no parallel task
/// gets fewer (scheduling a rayon task costs a few microseconds).
const MIN_TASK_MACS: usize = 1 << 15;

/// Quantizes each row of `x` to `nb` blocks (rows in parallel when there are several).
fn quantize_rows<'p, B: Default + Copy + Send>(
    pool: &'p BufferPool<B>,
    x: &[f32],
    rows: usize,
    nb: usize,
    quantize: fn(&[f32], &mut [B]),
) -> Pooled<'p, B> {
    // Every block is written below.
    let mut acts = pool.take(rows * nb);
    let k = x.len() / rows;
    if rows >= 4 && rayon::current_num_threads() > 1 {
        acts.par_chunks_mut(nb)
            .zip(x.par_chunks(k))
            .for_each(|(a, xr)| quantize(xr, a));
    } else {
        for (a, xr) in acts.chunks_mut(nb).zip(x.chunks(k)) {
            quantize(xr, a);
        }
    }
    acts
}

/// One weight matrix of a matmul: `out` rows of `row_bytes` bytes stored in `layout` (padded
/// to whole groups of rows where the layout stores rows in groups). `L` is a [`Layout`] or,
/// once the activations are chosen, one of its typed halves.
#[derive(Clone, Copy)]
pub(super) struct Mat<'a, L> {
    pub(super) w: &'a [u8],
    pub(super) layout: L,
    pub(super) out: usize,
    pub(super) row_bytes: usize,
}

impl<'a, L> Mat<'a, L> {
    /// The same matrix with its layout named by another type (a [`Layout`]'s typed half).
    pub(super) fn with_layout<M>(&self, layout: M) -> Mat<'a, M> {
        Mat {
            w: self.w,
            layout,
            out: self.out,
            row_bytes: self.row_bytes,
        }
    }
}

/// Whether an implementation takes a tile of some size for a layout.
type TileChoice = fn(Isa, Layout) -> bool;

/// The kernels of a matmul, for 8, 4, 2 and 1 activation rows at a time. `wide`: whether a
/// layout's kernel takes eight rows (those whose registers hold eight rows' sums; elsewhere
/// four spill less). A row's result is the same bits whichever computes it. Two rows at a
/// time read the weights once where one at a time would read them twice: a speculative
/// verify pass of two or three tokens, or a batch of two streams (where `pair` says so).
struct Dots<D8, D4, D2, D1> {
    wide: TileChoice,
    /// Whether a layout's rows left after the tiles of four go two at a time.
    pair: TileChoice,
    isa: Isa,
    dot8: D8,
    dot4: D4,
    dot2: D2,
    dot1: D1,
}

impl<D8, D4, D2, D1> Dots<D8, D4, D2, D1> {
    /// The four kernels, named with their signatures (so closures get them).
    fn new<A, L>(
        isa: Isa,
        (wide, pair): (TileChoice, TileChoice),
        dot8: D8,
        dot4: D4,
        dot2: D2,
        dot1: D1,
    ) -> Self
    where
        D8: Fn(L, &[u8], &[&[A]; 8], &mut [[f32; 8]]),
        D4: Fn(L, &[u8], &[&[A]; 4], &mut [[f32; 4]]),
        D2: Fn(L, &[u8], &[&[A]; 2], &mut [[f32; 2]]),
        D1: Fn(L, &[u8], &[&[A]; 1], &mut [[f32; 1]]),
    {
        Self {
            wide,
            pair,
            isa,
            dot8,
            dot4,
            dot2,
            dot1,
        }
    }
}

/// Runs `dot` on activation rows `first..` `R` at a time while `R` remain, writing each
/// tile's results into its rows of `dst`; returns the first row not done.
fn tiles<'a, A: 'a, L: Copy, const R: usize>(
    dot: &impl Fn(L, &[u8], &[&[A]; R], &mut [[f32; R]]),
    layout: L,
    w: &[u8],
    act: &impl Fn(usize) -> &'a [A],
    dst: &mut [&mut [f32]],
    first: usize,
) -> usize {
    let mut r = first;
    let Some(cols) = dst.first().map(|d| d.len()) else {
        return r;
    };
    // Nothing to allocate (and clear) when no whole tile remains: a decode step's single row
    // would otherwise zero buffers of eight and four sums per column for nothing, in every
    // task; for Gemma 3's 262,144-column output head, 12 MB of zeroing per token.
    if r + R > dst.len() {
        return r;
    }
    let mut out = vec![[0f32; R]; cols];
    while r + R <= dst.len() {
        let a: [&[A]; R] = std::array::from_fn(|i| act(r + i));
        dot(layout, w, &a, &mut out);
        for (i, d) in dst[r..r + R].iter_mut().enumerate() {
            for (v, o) in d.iter_mut().zip(&out) {
                *v = o[i];
            }
        }
        r += R;
    }
    r
}

/// The quantized input of a matmul: `rows` rows of `nb` blocks (`k` values).
struct Activations<'a, A> {
    rows: usize,
    nb: usize,
    k: usize,
    acts: &'a [A],
}

/// The columns of one matrix that one task computes, and its pieces of the output rows.
struct Task<'y> {
    mat: usize,
    first_col: usize,
    dst: Vec<&'y mut [f32]>,
}

/// `y_m[r][c] = w_m[c] · acts[r]` for each matrix `m`, written in full into `ys[m]` (`rows ×
/// out`). Output columns are split into chunks run in parallel; in a chunk each weight row
/// meets the activation rows four at a time (one unpack of a weight block serves four rows),
/// then one at a time for the rest.
fn matmul<A: Sync, L: Copy + Into<Layout> + Sync>(
    ys: &mut [&mut [f32]],
    mats: &[Mat<L>],
    input: Activations<A>,
    dots: Dots<
        impl Fn(L, &[u8], &[&[A]; 8], &mut [[f32; 8]]) + Sync,
        impl Fn(L, &[u8], &[&[A]; 4], &mut [[f32; 4]]) + Sync,
        impl Fn(L, &[u8], &[&[A]; 2], &mut [[f32; 2]]) + Sync,
        impl Fn(L, &[u8], &[&[A]; 1], &mut [[f32; 1]]) + Sync,
    >,
) {
    let Dots {
        wide,
        pair,
        isa,
        dot8,
        dot4,
        dot2,
        dot1,
    } = dots;
    let Activations { rows, nb, k, acts } = input;
    let threads = rayon::current_num_threads();
    let total: usize = mats.iter().map(|m| m.out).sum();
    let col_macs = rows * k;
    let min_cols = MIN_TASK_MACS.div_ceil(col_macs).max(1);
    // About 8 chunks per thread, so a thread slowed down by a shared core hands work over;
    // chunks start at whole groups of rows for formats that store rows in groups.
    let group = mats
        .iter()
        .map(|m| m.layout.into().row_group())
        .max()
        .unwrap_or(1);
    let cols = total
        .div_ceil(threads * 8)
        .max(min_cols)
        .next_multiple_of(group);
    // Each chunk of columns gets its own piece of every output row, so results are written
    // in place, row-major (a transposed buffer and a transpose afterwards cost 13% of a
    // prefill matmul: the transpose's strides aliased in the cache). The chunks cover every
    // column of every row, and the kernels store their sums (they do not add to what is
    // there), so the buffers need no clearing.
    let mut tasks = Vec::new();
    for (mat, (m, y)) in mats.iter().zip(ys.iter_mut()).enumerate() {
        if m.out == 0 {
            continue;
        }
        let mut parts: Vec<Vec<&mut [f32]>> = (0..m.out.div_ceil(cols))
            .map(|_| Vec::with_capacity(rows))
            .collect();
        for row in y.chunks_mut(m.out) {
            for (part, piece) in parts.iter_mut().zip(row.chunks_mut(cols)) {
                part.push(piece);
            }
        }
        tasks.extend(parts.into_iter().enumerate().map(|(ci, dst)| Task {
            mat,
            first_col: ci * cols,
            dst,
        }));
    }
    // Within a chunk: activation rows eight (`wide`) or four at a time (they stay in L1),
    // against each of the chunk's weight rows in turn (they stay in L2); then two at a time,
    // and the last row alone.
    let work = |task: Task| {
        let Task {
            mat,
            first_col: c0,
            mut dst,
        } = task;
        let m = &mats[mat];
        let ncols = dst[0].len();
        let end = (c0 + ncols).next_multiple_of(m.layout.into().row_group());
        let wch = &m.w[c0 * m.row_bytes..end * m.row_bytes];
        let act = |r: usize| &acts[r * nb..(r + 1) * nb];
        let mut r = 0;
        if wide(isa, m.layout.into()) {
            r = tiles(&dot8, m.layout, wch, &act, &mut dst, r);
        }
        r = tiles(&dot4, m.layout, wch, &act, &mut dst, r);
        if pair(isa, m.layout.into()) {
            r = tiles(&dot2, m.layout, wch, &act, &mut dst, r);
        }
        for d in &mut dst[r..] {
            dot1(m.layout, wch, &[act(r)], d.as_chunks_mut::<1>().0);
            r += 1;
        }
    };
    if threads > 1 && total * col_macs >= 2 * MIN_TASK_MACS && tasks.len() > 1 {
        // One chunk per task (no sequential runs of chunks): a worker descheduled by a busy
        // neighbour holds up at most one chunk while the others take the rest. Idle rayon
        // workers go to sleep instead of spinning. A model's pass runs on a pool thread
        // (`Decoder::pass`), so the caller is one of the workers: as many threads compete
        // for the cores as the pool has.
        tasks.into_par_iter().with_max_len(1).for_each(work);
    } else {
        tasks.into_iter().for_each(work);
    }
}

/// The activation blocks one family of layouts multiplies: how a row is quantized into them,
/// and the kernels that take them.
pub(super) trait ActivationBlock: Default + Copy + Send + Sync + Sized {
    type Layout: Copy + Into<Layout> + Sync;
    /// Values per block.
    const ELEMS: usize;
    /// Where a pass keeps its quantized rows of this kind.
    fn pool(scratch: &PassScratch) -> &BufferPool<Self>;
    fn quantize(x: &[f32], out: &mut [Self]);
    fn dot<const R: usize>(
        isa: Isa,
        layout: Self::Layout,
        w: &[u8],
        a: &[&[Self]; R],
        out: &mut [[f32; R]],
    );
}

impl ActivationBlock for Q8Block {
    type Layout = Q8Layout;
    const ELEMS: usize = kernels::QK;
    fn pool(scratch: &PassScratch) -> &BufferPool<Self> {
        &scratch.q8
    }
    fn quantize(x: &[f32], out: &mut [Self]) {
        kernels::quantize_q8(x, out)
    }
    fn dot<const R: usize>(isa: Isa, l: Q8Layout, w: &[u8], a: &[&[Self]; R], o: &mut [[f32; R]]) {
        kernels::dot_q8::<R>(isa, l, w, a, o)
    }
}

impl ActivationBlock for Q8KBlock {
    type Layout = Q8KLayout;
    const ELEMS: usize = kernels::QK_K;
    fn pool(scratch: &PassScratch) -> &BufferPool<Self> {
        &scratch.q8k
    }
    fn quantize(x: &[f32], out: &mut [Self]) {
        kernels::quantize_q8k(x, out)
    }
    fn dot<const R: usize>(isa: Isa, l: Q8KLayout, w: &[u8], a: &[&[Self]; R], o: &mut [[f32; R]]) {
        kernels::dot_q8k::<R>(isa, l, w, a, o)
    }
}

/// `x` (`rows × k`) quantized once into `A`'s blocks, times every matrix of `mats`; the
/// results (`rows × out` each) and the quantized rows in `scratch`'s buffers.
pub(super) fn quantized_matmul<'s, A: ActivationBlock>(
    scratch: &'s PassScratch,
    isa: Isa,
    mats: &[Mat<A::Layout>],
    x: &[f32],
    rows: usize,
    k: usize,
) -> Vec<Pooled<'s, f32>> {
    let nb = k / A::ELEMS;
    let acts = quantize_rows(A::pool(scratch), x, rows, nb, A::quantize);
    let mut ys: Vec<Pooled<f32>> = mats
        .iter()
        .map(|m| scratch.floats.take(rows * m.out))
        .collect();
    let mut views: Vec<&mut [f32]> = ys.iter_mut().map(|y| &mut y[..]).collect();
    let input = Activations {
        rows,
        nb,
        k,
        acts: &acts,
    };
    let dots = Dots::new(
        isa,
        (Isa::wide_tiles, Isa::pair_tiles),
        |layout, w, a, o| A::dot::<8>(isa, layout, w, a, o),
        |layout, w, a, o| A::dot::<4>(isa, layout, w, a, o),
        |layout, w, a, o| A::dot::<2>(isa, layout, w, a, o),
        |layout, w, a, o| A::dot::<1>(isa, layout, w, a, o),
    );
    matmul::<A, _>(&mut views, mats, input, dots);
    ys
}

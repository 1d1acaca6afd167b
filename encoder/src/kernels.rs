//! The arithmetic of the encoder: a dense layer over weights packed once at
//! load time, layer normalisation, GELU and softmax's exponent.
//!
//! The dense layer is the whole cost. Its weights are stored in blocks of
//! [`BLOCK`] outputs, each block contiguous over the inputs, so one pass
//! streams a block from memory once per tile of tokens while the tile's
//! partial sums stay in registers. The same code is compiled three times
//! (AVX-512, AVX2 with FMA, the baseline) and the best the CPU has is chosen
//! once; results differ between them only by rounding (fused or separate
//! multiply-add).

use std::sync::OnceLock;

/// Outputs per packed block.
pub(super) const BLOCK: usize = 32;

/// A linear layer `y = x Wᵀ + b` with `W` packed for [`dense`].
pub(super) struct Dense {
    /// `blocks × input × BLOCK`, the last block padded with zeros.
    packed: Vec<f32>,
    bias: Vec<f32>,
    input: usize,
    output: usize,
}

impl Dense {
    /// Packs a PyTorch-layout weight (`output × input`, row-major).
    pub(super) fn pack(weight: &[f32], bias: Vec<f32>, input: usize, output: usize) -> Dense {
        assert_eq!(weight.len(), input * output, "weight shape");
        assert_eq!(bias.len(), output, "bias shape");
        let blocks = output.div_ceil(BLOCK);
        let mut packed = vec![0.0; blocks * input * BLOCK];
        for o in 0..output {
            let (b, j) = (o / BLOCK, o % BLOCK);
            for k in 0..input {
                packed[(b * input + k) * BLOCK + j] = weight[o * input + k];
            }
        }
        Dense {
            packed,
            bias,
            input,
            output,
        }
    }

    /// Inputs per token.
    pub(super) fn input(&self) -> usize {
        self.input
    }

    /// Outputs per token.
    pub(super) fn output(&self) -> usize {
        self.output
    }

    /// `y[t] = x[t] Wᵀ + b` for every token `t` (`x`: tokens × input,
    /// `y`: tokens × output, both row-major).
    pub(super) fn apply(&self, isa: &Isa, x: &[f32], y: &mut [f32]) {
        let tokens = x.len() / self.input;
        assert_eq!(x.len(), tokens * self.input, "input shape");
        assert_eq!(y.len(), tokens * self.output, "output shape");
        (isa.dense)(self, x, y, tokens);
    }
}

/// The kernels compiled for one instruction set.
pub(super) struct Isa {
    name: &'static str,
    dense: fn(&Dense, &[f32], &mut [f32], usize),
}

/// The kernels this CPU can run, best first (the portable one last).
fn available() -> Vec<Isa> {
    let mut isas = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            isas.push(Isa {
                name: "avx512",
                dense: x86::dense_avx512,
            });
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            isas.push(Isa {
                name: "avx2+fma",
                dense: x86::dense_avx2,
            });
        }
    }
    isas.push(Isa {
        name: "portable",
        dense: dense_portable,
    });
    isas
}

/// The kernels this CPU can run, best first, found once.
pub(super) fn kernels() -> &'static [Isa] {
    static ISAS: OnceLock<Vec<Isa>> = OnceLock::new();
    ISAS.get_or_init(available)
}

impl Isa {
    /// Its name (`avx512`, `avx2+fma`, `portable`).
    pub(super) fn name(&self) -> &'static str {
        self.name
    }
}

fn dense_portable(layer: &Dense, x: &[f32], y: &mut [f32], tokens: usize) {
    for (b, block) in layer.packed.chunks_exact(layer.input * BLOCK).enumerate() {
        let first = b * BLOCK;
        let width = BLOCK.min(layer.output - first);
        for t in 0..tokens {
            let mut sums = [0.0f32; BLOCK];
            sums[..width].copy_from_slice(&layer.bias[first..first + width]);
            let row = &x[t * layer.input..(t + 1) * layer.input];
            for (v, w) in row.iter().zip(block.chunks_exact(BLOCK)) {
                sums.iter_mut().zip(w).for_each(|(s, w)| *s += v * w);
            }
            let at = t * layer.output + first;
            y[at..at + width].copy_from_slice(&sums[..width]);
        }
    }
}

/// For every block, the tokens in tiles of `TILE` (then one at a time):
/// `tile(block, x rows, tile rows, bias) -> sums`. The SIMD tiles below fill
/// `sums`; this loop only places them.
#[inline(always)]
fn for_each_tile<const TILE: usize>(
    layer: &Dense,
    x: &[f32],
    y: &mut [f32],
    tokens: usize,
    mut tile: impl FnMut(&[f32], &[f32], usize, &[f32; BLOCK], &mut [[f32; BLOCK]; TILE]),
) {
    let input = layer.input;
    let mut sums = [[0.0f32; BLOCK]; TILE];
    for (b, block) in layer.packed.chunks_exact(input * BLOCK).enumerate() {
        let first = b * BLOCK;
        let width = BLOCK.min(layer.output - first);
        let mut bias = [0.0f32; BLOCK];
        bias[..width].copy_from_slice(&layer.bias[first..first + width]);
        let mut t = 0;
        while t < tokens {
            let rows = TILE.min(tokens - t);
            tile(
                block,
                &x[t * input..(t + rows) * input],
                rows,
                &bias,
                &mut sums,
            );
            for (r, row) in sums.iter().take(rows).enumerate() {
                let at = (t + r) * layer.output + first;
                y[at..at + width].copy_from_slice(&row[..width]);
            }
            t += rows;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{BLOCK, Dense, for_each_tile};

    /// Tokens per tile: their sums (two 16-wide registers each) stay in
    /// registers while a block streams past.
    const TILE_512: usize = 8;
    /// Tokens per tile with 8-wide registers (four per token).
    const TILE_256: usize = 3;

    pub(super) fn dense_avx512(layer: &Dense, x: &[f32], y: &mut [f32], tokens: usize) {
        // SAFETY: chosen only after `is_x86_feature_detected!("avx512f")`.
        unsafe { avx512(layer, x, y, tokens) }
    }

    pub(super) fn dense_avx2(layer: &Dense, x: &[f32], y: &mut [f32], tokens: usize) {
        // SAFETY: chosen only after detecting both `avx2` and `fma`.
        unsafe { avx2(layer, x, y, tokens) }
    }

    #[target_feature(enable = "avx512f")]
    fn avx512(layer: &Dense, x: &[f32], y: &mut [f32], tokens: usize) {
        let input = layer.input;
        for_each_tile::<TILE_512>(layer, x, y, tokens, |block, x, rows, bias, sums| {
            assert!(block.len() == input * BLOCK && x.len() == rows * input && rows <= TILE_512);
            // SAFETY: the asserts above bound every pointer: block rows `k <
            // input` of BLOCK values, x rows `r < rows` of `input` values,
            // sums rows of BLOCK values; unaligned loads and stores.
            unsafe {
                let b0 = _mm512_loadu_ps(bias.as_ptr());
                let b1 = _mm512_loadu_ps(bias.as_ptr().add(16));
                let mut acc = [[b0, b1]; TILE_512];
                let w = block.as_ptr();
                let xp = x.as_ptr();
                if rows == TILE_512 {
                    for k in 0..input {
                        let w0 = _mm512_loadu_ps(w.add(k * BLOCK));
                        let w1 = _mm512_loadu_ps(w.add(k * BLOCK + 16));
                        for (r, a) in acc.iter_mut().enumerate() {
                            let v = _mm512_set1_ps(*xp.add(r * input + k));
                            a[0] = _mm512_fmadd_ps(v, w0, a[0]);
                            a[1] = _mm512_fmadd_ps(v, w1, a[1]);
                        }
                    }
                } else {
                    for k in 0..input {
                        let w0 = _mm512_loadu_ps(w.add(k * BLOCK));
                        let w1 = _mm512_loadu_ps(w.add(k * BLOCK + 16));
                        for (r, a) in acc.iter_mut().take(rows).enumerate() {
                            let v = _mm512_set1_ps(*xp.add(r * input + k));
                            a[0] = _mm512_fmadd_ps(v, w0, a[0]);
                            a[1] = _mm512_fmadd_ps(v, w1, a[1]);
                        }
                    }
                }
                for (a, s) in acc.iter().zip(sums.iter_mut()).take(rows) {
                    _mm512_storeu_ps(s.as_mut_ptr(), a[0]);
                    _mm512_storeu_ps(s.as_mut_ptr().add(16), a[1]);
                }
            }
        });
    }

    #[target_feature(enable = "avx2,fma")]
    fn avx2(layer: &Dense, x: &[f32], y: &mut [f32], tokens: usize) {
        let input = layer.input;
        for_each_tile::<TILE_256>(layer, x, y, tokens, |block, x, rows, bias, sums| {
            assert!(block.len() == input * BLOCK && x.len() == rows * input && rows <= TILE_256);
            // SAFETY: as in `avx512`: every offset is below the lengths the
            // assert checks; unaligned loads and stores.
            unsafe {
                let bp = bias.as_ptr();
                let b = [
                    _mm256_loadu_ps(bp),
                    _mm256_loadu_ps(bp.add(8)),
                    _mm256_loadu_ps(bp.add(16)),
                    _mm256_loadu_ps(bp.add(24)),
                ];
                let mut acc = [b; TILE_256];
                let w = block.as_ptr();
                let xp = x.as_ptr();
                for k in 0..input {
                    let row = w.add(k * BLOCK);
                    let ws = [
                        _mm256_loadu_ps(row),
                        _mm256_loadu_ps(row.add(8)),
                        _mm256_loadu_ps(row.add(16)),
                        _mm256_loadu_ps(row.add(24)),
                    ];
                    for (r, a) in acc.iter_mut().take(rows).enumerate() {
                        let v = _mm256_set1_ps(*xp.add(r * input + k));
                        for (a, w) in a.iter_mut().zip(ws) {
                            *a = _mm256_fmadd_ps(v, w, *a);
                        }
                    }
                }
                for (a, s) in acc.iter().zip(sums.iter_mut()).take(rows) {
                    for (i, a) in a.iter().enumerate() {
                        _mm256_storeu_ps(s.as_mut_ptr().add(8 * i), *a);
                    }
                }
            }
        });
    }
}

/// Layer normalisation of each row of `x` in place.
pub(super) fn layer_norm(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = gamma.len();
    for row in x.chunks_exact_mut(width) {
        let mean = row.iter().sum::<f32>() / width as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
        let scale = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * scale * g + b;
        }
    }
}

/// GELU as BERT defines it, `x Φ(x)` with the exact normal CDF (erf to
/// about 1.5e-7).
pub(super) fn gelu(x: &mut [f32]) {
    for v in x {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// The error function: Abramowitz and Stegun 7.1.26, absolute error below
/// 1.5e-7, branch-free so it vectorises.
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_72 + t * (1.421_413_8 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

/// `e^x` for `x ≤ 0` down to where it underflows (softmax and erf need no
/// more), relative error about 2e-7, branch-free.
pub(super) fn exp(x: f32) -> f32 {
    let x = x.max(-87.0);
    // e^x = 2^n · e^r with n = round(x / ln 2), |r| ≤ ln2 / 2.
    let n = (x * std::f32::consts::LOG2_E).round();
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (0.166_666_67
                    + r * (0.041_666_668 + r * (0.008_333_334 + r * 0.001_388_889)))));
    let scale = f32::from_bits((((n as i32) + 127) as u32) << 23);
    p * scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_matches_the_plain_product() {
        let (input, output) = (37, 70);
        let weight: Vec<f32> = (0..input * output)
            .map(|i| ((i * 7919) % 101) as f32 / 50.0 - 1.0)
            .collect();
        let bias: Vec<f32> = (0..output).map(|o| o as f32 / 10.0).collect();
        let layer = Dense::pack(&weight, bias.clone(), input, output);
        // Every kernel this CPU can run, on tiles full and partial.
        for (isa, tokens) in available()
            .iter()
            .flat_map(|isa| [1, 3, 8, 11, 17].map(|t| (isa, t)))
        {
            let x: Vec<f32> = (0..tokens * input)
                .map(|i| ((i * 31) % 17) as f32 / 8.0 - 1.0)
                .collect();
            let mut y = vec![0.0; tokens * output];
            (isa.dense)(&layer, &x, &mut y, tokens);
            for t in 0..tokens {
                for o in 0..output {
                    let want: f32 = bias[o]
                        + (0..input)
                            .map(|k| x[t * input + k] * weight[o * input + k])
                            .sum::<f32>();
                    let got = y[t * output + o];
                    assert!(
                        (got - want).abs() < 1e-4,
                        "{} t{t} o{o}: {got} vs {want}",
                        isa.name
                    );
                }
            }
        }
    }

    #[test]
    fn exp_and_erf_are_accurate() {
        for i in 0..=4000 {
            let x = -40.0 + i as f32 * 0.01;
            let want = (x as f64).exp();
            let got = exp(x) as f64;
            assert!(
                ((got - want) / want).abs() < 1e-6,
                "exp({x}): {got} vs {want}"
            );
        }
        // erf against its series at points where the series converges fast.
        for &(x, want) in &[
            (0.0f32, 0.0f64),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (-1.5, -0.966_105_146_475_310_7),
            (2.5, 0.999_593_047_982_555),
        ] {
            let got = erf(x) as f64;
            assert!((got - want).abs() < 5e-7, "erf({x}): {got} vs {want}");
        }
    }
}

//! Principal components, for shrinking the sentence model's 384-dimension
//! word-piece vectors to the table's size. Deterministic (fixed start,
//! fixed number of iterations, fixed signs), so a model gives one table.

/// Dimensions the shipped table keeps.
pub const DIM: usize = 128;

/// Subspace iterations; the leading components of word-piece vectors are
/// well separated, so this is far past convergence for the table's use.
const ITERATIONS: usize = 80;

/// `vectors` centred on their mean and projected onto their first `dim`
/// principal components (largest variance first).
pub fn project(vectors: &[Vec<f32>], dim: usize) -> Vec<Vec<f32>> {
    let Some(first) = vectors.first() else {
        return Vec::new();
    };
    let n = first.len();
    let dim = dim.min(n);
    let mut mean = vec![0f64; n];
    for v in vectors {
        for (m, x) in mean.iter_mut().zip(v) {
            *m += *x as f64;
        }
    }
    mean.iter_mut().for_each(|m| *m /= vectors.len() as f64);
    // Covariance (upper triangle accumulated, then mirrored).
    let mut cov = vec![0f64; n * n];
    let mut centred = vec![0f64; n];
    for v in vectors {
        for (c, (x, m)) in centred.iter_mut().zip(v.iter().zip(&mean)) {
            *c = *x as f64 - m;
        }
        for i in 0..n {
            let ci = centred[i];
            let row = &mut cov[i * n..(i + 1) * n];
            for j in i..n {
                row[j] += ci * centred[j];
            }
        }
    }
    for i in 0..n {
        for j in 0..i {
            cov[i * n + j] = cov[j * n + i];
        }
    }
    // Subspace iteration from a fixed start.
    let mut basis: Vec<Vec<f64>> = (0..dim)
        .map(|k| {
            (0..n)
                .map(|i| if i == k { 1.0 } else { start_noise(k, i) })
                .collect()
        })
        .collect();
    orthonormalise(&mut basis);
    for _ in 0..ITERATIONS {
        for b in basis.iter_mut() {
            *b = multiply(&cov, b, n);
        }
        orthonormalise(&mut basis);
    }
    // Largest variance first; each component's largest entry positive.
    let mut ranked: Vec<(f64, Vec<f64>)> = basis
        .into_iter()
        .map(|b| {
            let cb = multiply(&cov, &b, n);
            let variance: f64 = b.iter().zip(&cb).map(|(x, y)| x * y).sum();
            (variance, b)
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    let components: Vec<Vec<f64>> = ranked
        .into_iter()
        .map(|(_, mut b)| {
            let largest = b
                .iter()
                .copied()
                .fold(0f64, |m, x| if x.abs() > m.abs() { x } else { m });
            if largest < 0.0 {
                b.iter_mut().for_each(|x| *x = -*x);
            }
            b
        })
        .collect();
    vectors
        .iter()
        .map(|v| {
            components
                .iter()
                .map(|c| {
                    c.iter()
                        .zip(v.iter().zip(&mean))
                        .map(|(w, (x, m))| w * (*x as f64 - m))
                        .sum::<f64>() as f32
                })
                .collect()
        })
        .collect()
}

fn start_noise(k: usize, i: usize) -> f64 {
    // A fixed, small, irregular perturbation (so no start is orthogonal to
    // a leading component).
    let h = (k as u64 + 1)
        .wrapping_mul(6364136223846793005)
        .wrapping_add((i as u64 + 1).wrapping_mul(1442695040888963407));
    ((h >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 1e-2
}

fn multiply(matrix: &[f64], v: &[f64], n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            matrix[i * n..(i + 1) * n]
                .iter()
                .zip(v)
                .map(|(a, b)| a * b)
                .sum()
        })
        .collect()
}

fn orthonormalise(basis: &mut [Vec<f64>]) {
    for k in 0..basis.len() {
        let (done, rest) = basis.split_at_mut(k);
        let b = &mut rest[0];
        for d in done.iter() {
            let dot: f64 = b.iter().zip(d).map(|(x, y)| x * y).sum();
            b.iter_mut().zip(d).for_each(|(x, y)| *x -= dot * y);
        }
        let norm = b.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > 0.0 {
            b.iter_mut().for_each(|x| *x /= norm);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_component_follows_the_widest_spread() {
        // Points spread along (1, 1, 0), a little along (1, -1, 0).
        let vectors: Vec<Vec<f32>> = (0..50)
            .map(|i| {
                let t = i as f32 - 25.0;
                let s = if i % 2 == 0 { 0.5 } else { -0.5 };
                vec![t + s, t - s, 0.0]
            })
            .collect();
        let p = project(&vectors, 2);
        let spread = |k: usize| p.iter().map(|v| v[k] * v[k]).sum::<f32>();
        assert!(spread(0) > 100.0 * spread(1));
        // Centred, the last point is (24, 25): 49/√2 along (1, 1)/√2.
        assert!((p[49][0].abs() - 49.0 / 2f32.sqrt()).abs() < 0.05);
    }
}

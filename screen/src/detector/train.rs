//! Training the detector's classifier: multiple-instance learning over
//! definitions (a poisoned definition has at least one piece aimed at the
//! model, a benign one has none), so a definition's score is its highest
//! piece's and the loss is taken there. Full-batch Adam from a fixed start,
//! single-threaded: the same examples give the same weights, bit for bit.
//!
//! The thresholds come from out-of-fold scores of the benign training
//! definitions (folds by group), never from a test set.

use super::{Classifier, dot, sigmoid};

/// One training definition: its pieces' vectors and its label.
#[derive(Debug, Clone)]
pub struct Example {
    /// The vectors of its pieces ([`super::Detector::pieces`]).
    pub pieces: Vec<Vec<f32>>,
    /// Whether it is poisoned.
    pub poisoned: bool,
    /// Definitions of one group (source file, template, server) go to the
    /// same fold.
    pub group: String,
    /// A benign tool of an MCP server: the thresholds also keep to their
    /// rates among these alone, the closest to what screening meets.
    pub mcp: bool,
}

/// How to train.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Hidden units.
    pub hidden: usize,
    /// Full passes over the examples.
    pub epochs: usize,
    /// Adam's step size.
    pub learning_rate: f32,
    /// Weight decay on the hidden weights.
    pub l2: f32,
    /// Folds for the out-of-fold scores the thresholds come from (0: none;
    /// the thresholds are then the defaults).
    pub folds: usize,
    /// Share of benign training definitions allowed at or above the high
    /// threshold, out of fold.
    pub high_rate: f32,
    /// Share allowed at or above the medium threshold.
    pub medium_rate: f32,
    /// Share of benign tools of MCP servers allowed at or above the high
    /// threshold (the target for real tools is at most 1 %).
    pub mcp_high_rate: f32,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            hidden: 16,
            epochs: 400,
            learning_rate: 0.01,
            l2: 3e-3,
            folds: 5,
            high_rate: 0.005,
            medium_rate: 0.02,
            mcp_high_rate: 0.01,
        }
    }
}

/// Weights of the network, without thresholds.
#[derive(Debug, Clone)]
struct Net {
    inputs: usize,
    hidden: usize,
    w1: Vec<f32>,
    b1: Vec<f32>,
    w2: Vec<f32>,
    b2: f32,
}

impl Net {
    fn new(inputs: usize, hidden: usize) -> Net {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        };
        let a1 = (6.0 / (inputs + hidden) as f32).sqrt();
        let w1 = (0..inputs * hidden).map(|_| next() * a1).collect();
        let a2 = (6.0 / (hidden + 1) as f32).sqrt();
        let w2 = (0..hidden).map(|_| next() * a2).collect();
        Net {
            inputs,
            hidden,
            w1,
            b1: vec![0.0; hidden],
            w2,
            b2: 0.0,
        }
    }

    /// The logit and the hidden activations.
    fn forward(&self, x: &[f32], hidden: &mut [f32]) -> f32 {
        let mut out = self.b2;
        for h in 0..self.hidden {
            let row = &self.w1[h * self.inputs..(h + 1) * self.inputs];
            hidden[h] = (self.b1[h] + dot(row, x)).tanh();
            out += self.w2[h] * hidden[h];
        }
        out
    }

    fn params(&mut self) -> [&mut [f32]; 4] {
        [
            &mut self.w1,
            &mut self.b1,
            &mut self.w2,
            std::slice::from_mut(&mut self.b2),
        ]
    }
}

/// Trains a classifier on `examples` (pieces of `inputs` dimensions) and
/// sets its thresholds from out-of-fold scores, which it returns too (one
/// per example; empty when `settings.folds` < 2).
pub fn train(
    examples: &[Example],
    inputs: usize,
    settings: &Settings,
    name: &str,
    table_sha256: &str,
    trained_on: &str,
) -> (Classifier, Vec<Option<f32>>) {
    let all: Vec<&Example> = examples.iter().collect();
    let net = fit(&all, inputs, settings);
    let oof = if settings.folds >= 2 {
        out_of_fold(examples, inputs, settings)
    } else {
        Vec::new()
    };
    let (high, medium) = if settings.folds >= 2 {
        let benign = |mcp_only: bool| -> Vec<f32> {
            oof.iter()
                .copied()
                .zip(examples)
                .filter(|(_, e)| !e.poisoned && (e.mcp || !mcp_only))
                .filter_map(|(s, _)| s)
                .collect()
        };
        let (all, mcp) = (benign(false), benign(true));
        (
            threshold(&all, settings.high_rate)
                .max(threshold(&mcp, settings.mcp_high_rate))
                .max(0.5),
            threshold(&all, settings.medium_rate)
                .max(threshold(&mcp, settings.medium_rate))
                .max(0.3),
        )
    } else {
        (0.9, 0.5)
    };
    let classifier = Classifier {
        name: name.to_string(),
        table_sha256: table_sha256.to_string(),
        inputs,
        hidden: net.hidden,
        w1: net.w1,
        b1: net.b1,
        w2: net.w2,
        b2: net.b2,
        high,
        medium: medium.min(high),
        trained_on: trained_on.to_string(),
    };
    (classifier, oof)
}

/// The score of a definition (its highest piece) under `classifier`.
pub fn score(classifier: &Classifier, example: &Example) -> f32 {
    example
        .pieces
        .iter()
        .map(|p| classifier.score(p))
        .fold(0.0, f32::max)
}

/// The lowest score that at most `rate` of `scores` reach: just above the
/// score ranked at that share (or 0.5 above everything, when none may).
fn threshold(scores: &[f32], rate: f32) -> f32 {
    let mut sorted = scores.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let allowed = (rate * sorted.len() as f32).floor() as usize;
    match sorted.get(allowed) {
        Some(&s) => next_up(s),
        None => 0.5,
    }
}

fn next_up(x: f32) -> f32 {
    (x + 1e-4).min(1.0)
}

/// Every example's score from a network trained without its fold (folds
/// by group, assigned by a hash of the group's name); `None` for an example
/// whose fold left no poisoned example to train on.
pub fn out_of_fold(examples: &[Example], inputs: usize, settings: &Settings) -> Vec<Option<f32>> {
    let folds = settings.folds.max(2);
    let fold_of = |g: &str| (fnv(g) % folds as u64) as usize;
    let mut scores = vec![None; examples.len()];
    for fold in 0..folds {
        let train: Vec<&Example> = examples
            .iter()
            .filter(|e| fold_of(&e.group) != fold)
            .collect();
        if train.iter().all(|e| !e.poisoned) {
            continue;
        }
        let net = fit(&train, inputs, settings);
        let mut hidden = vec![0.0; net.hidden];
        for (i, e) in examples.iter().enumerate() {
            if fold_of(&e.group) != fold {
                continue;
            }
            let best = e
                .pieces
                .iter()
                .map(|p| sigmoid(net.forward(p, &mut hidden)))
                .fold(0.0, f32::max);
            scores[i] = Some(best);
        }
    }
    scores
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// The network's weights after `settings.epochs` of full-batch Adam on the
/// multiple-instance loss, the two classes weighted equally.
fn fit(examples: &[&Example], inputs: usize, settings: &Settings) -> Net {
    let mut net = Net::new(inputs, settings.hidden);
    let positives = examples.iter().filter(|e| e.poisoned).count().max(1) as f32;
    let negatives = examples.iter().filter(|e| !e.poisoned).count().max(1) as f32;
    let sizes = [
        inputs * settings.hidden,
        settings.hidden,
        settings.hidden,
        1,
    ];
    let mut grads: Vec<Vec<f32>> = sizes.iter().map(|&n| vec![0.0; n]).collect();
    let mut m: Vec<Vec<f32>> = sizes.iter().map(|&n| vec![0.0; n]).collect();
    let mut v: Vec<Vec<f32>> = sizes.iter().map(|&n| vec![0.0; n]).collect();
    let (beta1, beta2, eps) = (0.9f32, 0.999f32, 1e-8f32);
    let mut hidden = vec![0.0; settings.hidden];
    let mut best_hidden = vec![0.0; settings.hidden];
    for epoch in 1..=settings.epochs {
        grads.iter_mut().for_each(|g| g.fill(0.0));
        for e in examples {
            let mut best: Option<(f32, usize)> = None;
            for (i, p) in e.pieces.iter().enumerate() {
                let logit = net.forward(p, &mut hidden);
                if best.is_none_or(|(b, _)| logit > b) {
                    best = Some((logit, i));
                }
            }
            let Some((logit, i)) = best else { continue };
            let x = &e.pieces[i];
            net.forward(x, &mut best_hidden);
            let (target, weight) = if e.poisoned {
                (1.0, 0.5 / positives)
            } else {
                (0.0, 0.5 / negatives)
            };
            // d(loss)/d(logit) of the weighted logistic loss.
            let d = weight * (sigmoid(logit) - target);
            grads[3][0] += d;
            for h in 0..settings.hidden {
                grads[2][h] += d * best_hidden[h];
                let dh = d * net.w2[h] * (1.0 - best_hidden[h] * best_hidden[h]);
                grads[1][h] += dh;
                let row = &mut grads[0][h * inputs..(h + 1) * inputs];
                row.iter_mut().zip(x).for_each(|(g, xv)| *g += dh * xv);
            }
        }
        for (g, w) in grads[0].iter_mut().zip(&net.w1) {
            *g += settings.l2 * w;
        }
        let correction1 = 1.0 - beta1.powi(epoch as i32);
        let correction2 = 1.0 - beta2.powi(epoch as i32);
        for (k, params) in net.params().into_iter().enumerate() {
            for (j, w) in params.iter_mut().enumerate() {
                let g = grads[k][j];
                m[k][j] = beta1 * m[k][j] + (1.0 - beta1) * g;
                v[k][j] = beta2 * v[k][j] + (1.0 - beta2) * g * g;
                let step = m[k][j] / correction1 / ((v[k][j] / correction2).sqrt() + eps);
                *w -= settings.learning_rate * step;
            }
        }
    }
    net
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(pieces: Vec<Vec<f32>>, poisoned: bool, group: &str) -> Example {
        Example {
            pieces,
            poisoned,
            group: group.to_string(),
            mcp: !poisoned,
        }
    }

    /// Poisoned definitions carry one piece near (0, 1) among benign
    /// pieces near (1, 0); benign ones carry only the latter.
    fn data() -> Vec<Example> {
        let benign = |i: usize| vec![1.0, 0.05 * (i % 5) as f32];
        let bad = |i: usize| vec![0.1 * (i % 3) as f32, 1.0];
        (0..40)
            .map(|i| {
                if i % 2 == 0 {
                    example(
                        vec![benign(i), bad(i), benign(i + 1)],
                        true,
                        &format!("p{i}"),
                    )
                } else {
                    example(vec![benign(i), benign(i + 2)], false, &format!("b{i}"))
                }
            })
            .collect()
    }

    #[test]
    fn it_learns_which_piece_makes_a_definition_poisoned() {
        let settings = Settings {
            hidden: 4,
            epochs: 200,
            folds: 4,
            ..Settings::default()
        };
        let (c, _) = train(&data(), 2, &settings, "t", "x", "test");
        assert!(c.score(&[0.0, 1.0]) > 0.9, "{}", c.score(&[0.0, 1.0]));
        assert!(c.score(&[1.0, 0.1]) < 0.1);
        let data = data();
        let held = data
            .iter()
            .filter(|e| e.poisoned && score(&c, e) >= c.high)
            .count();
        let flagged = data
            .iter()
            .filter(|e| !e.poisoned && score(&c, e) >= c.high)
            .count();
        assert_eq!((held, flagged), (20, 0));
    }

    #[test]
    fn training_is_deterministic() {
        let settings = Settings {
            hidden: 3,
            epochs: 20,
            folds: 0,
            ..Settings::default()
        };
        let (a, _) = train(&data(), 2, &settings, "t", "x", "test");
        let (b, _) = train(&data(), 2, &settings, "t", "x", "test");
        assert_eq!(a, b);
    }
}

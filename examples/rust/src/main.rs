//! A softmax policy trained by policy gradient on a synthetic bandit, its buffers checked by
//! nanscope's SDK through the C ABI (docs/sdk.md).
//!
//!     rust_trainer RUN_DIR [--bug] [--folds N] [--steps N]
//!
//! From step 10 of fold 1 on, the observations arrive unnormalised (x100). With --bug the softmax
//! is exp(z) / sum(exp(z)) without subtracting the row's maximum: exp overflows to inf and inf/inf
//! is NaN, first in the slot `probs`. Without --bug the maximum is subtracted. The IQN head of the
//! trainer this one imitates is off: its slot is registered with no buffer (`None`), absent from
//! the run. The guard skips the update of a step that fired. Exit status 0, or 1 on a refused call.
use nanscope::{ffi, Error, Session, Slot};

const OBS: usize = 8;
const ACTIONS: usize = 4;
const BATCH: usize = 32;

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32) / 16777216.0
    }
}

fn address(v: &[f32]) -> Option<(u64, usize)> {
    Some((v.as_ptr() as u64, v.len()))
}

fn run(dir: &str, bug: bool, folds: i32, steps: i32) -> Result<(), Error> {
    let mut obs = vec![0f32; BATCH * OBS];
    let mut logits = vec![0f32; BATCH * ACTIONS];
    let mut probs = vec![0f32; BATCH * ACTIONS];
    let mut loss = vec![0f32; 1];
    let mut d_logits = vec![0f32; BATCH * ACTIONS];
    let mut grad = vec![0f32; OBS * ACTIONS];
    let mut grad_norm = vec![0f32; 1];
    let mut weights = vec![0f32; OBS * ACTIONS];
    let iqn_tau: Option<Vec<f32>> = None; // the IQN head is off in this run

    let config = format!("bug = {}\nlambda_iqn = 0\n", bug);
    let mut s = Session::open(dir, "rust_trainer", &config, folds)?;
    let slot = |name, phase, order, consumers, buffer, role| Slot {
        name,
        phase,
        order,
        consumers,
        buffer,
        role,
    };
    let s_obs = s.register(&slot("obs", "sample", 0, "logits, grad", address(&obs), ffi::NS_ROLE_NONE))?;
    let s_tau = s.register(&slot("iqn_tau", "sample", 1, "", iqn_tau.as_deref().and_then(address), ffi::NS_ROLE_NONE))?;
    let s_logits = s.register(&slot("logits", "forward", 2, "probs", address(&logits), ffi::NS_ROLE_NONE))?;
    let s_probs = s.register(&slot("probs", "forward", 3, "loss, d_logits", address(&probs), ffi::NS_ROLE_NONE))?;
    let s_loss = s.register(&slot("loss", "forward", 4, "", address(&loss), ffi::NS_ROLE_LOSS))?;
    let s_d = s.register(&slot("d_logits", "backward", 5, "grad", address(&d_logits), ffi::NS_ROLE_NONE))?;
    let s_grad = s.register(&slot("grad", "backward", 6, "grad_norm, weights", address(&grad), ffi::NS_ROLE_NONE))?;
    let s_norm = s.register(&slot("grad_norm", "backward", 7, "", address(&grad_norm), ffi::NS_ROLE_GRAD_NORM))?;
    let s_w = s.register(&slot("weights", "optimizer", 8, "", address(&weights), ffi::NS_ROLE_NONE))?;

    let mut rng = Lcg(11);
    for w in weights.iter_mut() {
        *w = 0.2 * (rng.next() - 0.5);
    }
    for fold in 0..folds {
        s.fold_begin(fold)?;
        let mut entry = None;
        for step in 0..steps {
            s.step_begin(step)?;
            // The bandit: action a pays obs[a]; the policy should learn to pick the largest.
            let mut rng = Lcg(((fold as u64) << 32) ^ (step as u64 + 1));
            for v in obs.iter_mut() {
                *v = 2.0 * rng.next() - 1.0;
                if fold == 1 && step >= 10 {
                    *v *= 100.0; // unnormalised observations
                }
            }
            let mut total = 0f32;
            for b in 0..BATCH {
                let row = &mut logits[b * ACTIONS..(b + 1) * ACTIONS];
                for a in 0..ACTIONS {
                    row[a] = (0..OBS).map(|i| obs[b * OBS + i] * weights[i * ACTIONS + a]).sum();
                }
                let shift = if bug { 0.0 } else { row.iter().cloned().fold(f32::MIN, f32::max) };
                let sum: f32 = row.iter().map(|z| (z - shift).exp()).sum();
                for a in 0..ACTIONS {
                    probs[b * ACTIONS + a] = (row[a] - shift).exp() / sum;
                }
                // Expected reward of the policy; the loss is its negative.
                for a in 0..ACTIONS {
                    total += probs[b * ACTIONS + a] * obs[b * OBS + a];
                }
            }
            loss[0] = -total / BATCH as f32;
            s.check(&[s_obs, s_tau, s_logits, s_probs, s_loss])?;
            for b in 0..BATCH {
                let expected: f32 = (0..ACTIONS).map(|a| probs[b * ACTIONS + a] * obs[b * OBS + a]).sum();
                for a in 0..ACTIONS {
                    let p = probs[b * ACTIONS + a];
                    d_logits[b * ACTIONS + a] = -p * (obs[b * OBS + a] - expected) / BATCH as f32;
                }
            }
            for i in 0..OBS {
                for a in 0..ACTIONS {
                    grad[i * ACTIONS + a] = (0..BATCH).map(|b| obs[b * OBS + i] * d_logits[b * ACTIONS + a]).sum();
                }
            }
            grad_norm[0] = grad.iter().map(|g| (*g as f64) * (*g as f64)).sum::<f64>().sqrt() as f32;
            s.check(&[s_d, s_grad, s_norm])?;
            if s.allows_update()? {
                for (w, g) in weights.iter_mut().zip(grad.iter()) {
                    *w -= 0.5 * g;
                }
            }
            s.check(&[s_w])?;
            let r = s.step_end()?;
            if r.entry_slot >= 0 {
                entry = Some((r.entry_slot, r.entry_step));
            }
        }
        s.fold_end(fold)?;
        match entry {
            Some((slot, step)) => println!("fold {}: loss {:.5}, entry slot {} at step {}", fold, loss[0], slot, step),
            None => println!("fold {}: loss {:.5}, clean", fold, loss[0]),
        }
    }
    s.close()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut dir = None;
    let (mut bug, mut folds, mut steps) = (false, 3, 30);
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--bug" => bug = true,
            "--folds" if i + 1 < args.len() => { i += 1; folds = args[i].parse().unwrap_or(0); }
            "--steps" if i + 1 < args.len() => { i += 1; steps = args[i].parse().unwrap_or(0); }
            a if !a.starts_with('-') && dir.is_none() => dir = Some(a.to_string()),
            _ => dir = None,
        }
        i += 1;
    }
    let dir = match dir.filter(|_| folds > 0 && steps > 0) {
        Some(d) => d,
        None => {
            eprintln!("usage: rust_trainer RUN_DIR [--bug] [--folds N] [--steps N]");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&dir, bug, folds, steps) {
        eprintln!("rust_trainer: {}", e);
        std::process::exit(1);
    }
}

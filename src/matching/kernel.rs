//! The probe kernels (`--kernel`): which one this CPU runs, and what each
//! checks cheaply. The kernels themselves are [`crate::matching::probe`]'s.

use serde::{Deserialize, Serialize};

use crate::matching::design::ProbeCost;

/// The probe kernels, as `--kernel` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Kernel {
    /// Wide buckets counted by VPOPCNTD: x86-64 with AVX-512F and VPOPCNTDQ.
    Avx512,
    /// Wide buckets counted with AVX2: x86-64 with AVX2 and BMI2.
    Avx2,
    /// Filter words and a scalar check: any CPU (ARM among them).
    Portable,
}

impl Kernel {
    /// The fastest kernel this CPU runs, and why.
    pub fn best() -> (Kernel, &'static str) {
        #[cfg(target_arch = "x86_64")]
        return match Simd::detect() {
            Some(Simd::Avx512) => (Kernel::Avx512, "this CPU has AVX-512F and VPOPCNTDQ"),
            Some(Simd::Avx2) => (
                Kernel::Avx2,
                "this CPU has AVX2 and BMI2, not AVX-512 VPOPCNTDQ",
            ),
            None => (Kernel::Portable, "this CPU lacks AVX2 or BMI2"),
        };
        #[cfg(not(target_arch = "x86_64"))]
        (
            Kernel::Portable,
            "not an x86-64 CPU: the wide kernels are x86-64's",
        )
    }

    /// `forced` (`--kernel`) if this CPU runs it, else the best, with why.
    pub fn choose(forced: Option<Kernel>) -> anyhow::Result<(Kernel, &'static str)> {
        let (best, why) = Kernel::best();
        match forced {
            None => Ok((best, why)),
            Some(kernel) if kernel.runs_here() => Ok((kernel, "chosen by --kernel")),
            Some(kernel) => anyhow::bail!(
                "--kernel {}: this CPU cannot run it ({why}); use --kernel {} or portable",
                kernel.flag(),
                best.flag()
            ),
        }
    }

    fn runs_here(self) -> bool {
        let best = Kernel::best().0;
        match self {
            Kernel::Avx512 => best == Kernel::Avx512,
            Kernel::Avx2 => best != Kernel::Portable,
            Kernel::Portable => true,
        }
    }

    /// The name `--kernel` takes.
    pub fn flag(self) -> &'static str {
        match self {
            Kernel::Avx512 => "avx512",
            Kernel::Avx2 => "avx2",
            Kernel::Portable => "portable",
        }
    }

    /// What a candidate costs the kernel, for the planner
    /// ([`crate::matching::design::plan`]): a wide kernel checks a vector of
    /// residues at a time (AVX-512 16, counted by one instruction; AVX2 8,
    /// each lane's lowest set bit cleared k times for k up to 3, else
    /// counted by nibbles), the filter-word kernel one candidate after a
    /// second miss into its bucket. Fitted on `scripts/bench_plan.sh`.
    pub fn probe_cost(self) -> ProbeCost {
        match self {
            Kernel::Avx512 => ProbeCost::new(0.08),
            Kernel::Avx2 => ProbeCost::new(0.17),
            Kernel::Portable => ProbeCost::new(14.0),
        }
    }

    /// What [`crate::matching::probe::probe`] runs, for `neardup plan` and
    /// `_summary.json`. A wide kernel takes every design whole, even one of
    /// under a candidate a probe: a vector over an empty or one-entry
    /// bucket is no dearer than a filter word, with no second miss.
    /// `plan`'s line on the kernel: what runs, and `why`.
    pub fn line(self, why: &str) -> String {
        format!("kernel: {} (--kernel {}: {why})", self.runs(), self.flag())
    }

    pub fn runs(self) -> &'static str {
        match self {
            Kernel::Avx512 => "wide buckets, AVX-512",
            Kernel::Avx2 => "wide buckets, AVX2",
            Kernel::Portable => "filter words",
        }
    }

    /// The wide kernel's instructions, if this is a wide kernel.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn simd(self) -> Option<Simd> {
        match self {
            Kernel::Avx512 => Some(Simd::Avx512),
            Kernel::Avx2 => Some(Simd::Avx2),
            Kernel::Portable => None,
        }
    }
}

/// The vector instructions the wide kernel is built for.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Simd {
    /// AVX-512F with VPOPCNTDQ: 16 residues a vector, counted by one
    /// instruction.
    Avx512,
    /// AVX2 (with BMI2, as every x86-64-v3 CPU has): 8 residues a
    /// vector, each lane's lowest set bit cleared k times for k up to 3,
    /// else counted by table lookups of their nibbles.
    Avx2,
}

#[cfg(target_arch = "x86_64")]
impl Simd {
    /// The best this CPU runs, if any.
    pub(crate) fn detect() -> Option<Simd> {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512vpopcntdq") {
            Some(Simd::Avx512)
        } else if has!("avx2") && has!("bmi2") {
            Some(Simd::Avx2)
        } else {
            None
        }
    }

    /// Every kind this CPU runs, for tests.
    #[cfg(test)]
    pub(crate) fn all_available() -> Vec<Simd> {
        match Simd::detect() {
            Some(Simd::Avx512) => vec![Simd::Avx512, Simd::Avx2],
            Some(Simd::Avx2) => vec![Simd::Avx2],
            None => Vec::new(),
        }
    }
}

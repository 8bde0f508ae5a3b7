//! The probe kernels (`--kernel`): which one this CPU runs, and what each
//! checks cheaply. The kernels themselves are [`crate::matching::probe`]'s.

use serde::{Deserialize, Serialize};

use crate::matching::design::Design;

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

    /// Candidates per probe the kernel checks cheaply: 160 with a wide
    /// kernel (AVX-512's population count, 16 residues per instruction, or
    /// AVX2, 8 a vector), else 1 (one filter word per probe, then a scalar
    /// check). Up to these, a few wide tables probe a row faster than many
    /// tables of filter words, and in less memory, with AVX2 as with
    /// AVX-512 (measured in the README's figures: `match` at a larger k and
    /// with more queries).
    pub fn max_candidates(self) -> f64 {
        match self {
            Kernel::Avx512 | Kernel::Avx2 => 160.0,
            Kernel::Portable => 1.0,
        }
    }

    /// The kernel [`crate::matching::probe::probe`] runs for `design` with this one: a design of at
    /// most one candidate a probe takes filter words whatever the CPU.
    pub fn for_design(self, design: &Design) -> Kernel {
        match design.expected_candidates > 1.0 {
            true => self,
            false => Kernel::Portable,
        }
    }

    /// What [`crate::matching::probe::probe`] runs for `design` with this kernel, for `neardup plan`
    /// and `_summary.json`.
    pub fn runs_for(self, design: &Design) -> &'static str {
        match self.for_design(design) {
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
    /// vector, counted by table lookups of their nibbles.
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

//! The process index and peers a scheduler gives through the environment,
//! so that one command line serves every process of a Kubernetes Indexed
//! Job or a Slurm job step.
//!
//! - **Kubernetes.** An Indexed Job sets `JOB_COMPLETION_INDEX` in each pod.
//!   The peers are the pods' DNS names under a headless Service, given as a
//!   pattern (`--hostfile-pattern 'neardup-{i}.neardup:4100'`) with
//!   `--processes`: Kubernetes does not tell a pod how many there are.
//! - **Slurm.** `srun` sets `SLURM_PROCID` and the step's task count, node
//!   list and tasks per node (`SLURM_STEP_NUM_TASKS`, `SLURM_STEP_NODELIST`,
//!   `SLURM_STEP_TASKS_PER_NODE`; without them, the job's `SLURM_NTASKS`,
//!   `SLURM_JOB_NODELIST`, `SLURM_TASKS_PER_NODE`). Tasks are laid out
//!   block by block, as Slurm's default distribution does: the first node's
//!   tasks, then the next node's; the k-th task on a node listens on the
//!   base port + k.
//!
//! Nothing here reads the process environment itself: callers pass a
//! lookup, so the rules are tested without touching it.

use anyhow::{bail, Context, Result};

/// Looks up an environment variable.
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What a scheduler says about this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Scheduler {
    /// A pod of a Kubernetes Indexed Job, with its completion index.
    Kubernetes { index: usize },
    /// A task of a Slurm job step.
    Slurm(SlurmStep),
}

/// A Slurm task's place in its step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SlurmStep {
    /// `SLURM_PROCID`: this task's rank.
    pub(crate) rank: usize,
    /// The step's number of tasks.
    pub(crate) tasks: usize,
    /// The step's nodes, in order.
    pub(crate) nodes: Vec<String>,
    /// Tasks on each of `nodes`.
    pub(crate) tasks_per_node: Vec<usize>,
}

impl Scheduler {
    /// The scheduler whose variables are set, if any (Kubernetes first:
    /// Slurm's variables do not reach a pod).
    pub(crate) fn detect(env: Env) -> Result<Option<Scheduler>> {
        if let Some(index) = env("JOB_COMPLETION_INDEX") {
            let index = number("JOB_COMPLETION_INDEX", &index)?;
            return Ok(Some(Scheduler::Kubernetes { index }));
        }
        match env("SLURM_PROCID") {
            Some(rank) => Ok(Some(Scheduler::Slurm(SlurmStep::from_env(&rank, env)?))),
            None => Ok(None),
        }
    }

    /// This process's index as the scheduler numbers it.
    pub(crate) fn process(&self) -> usize {
        match self {
            Scheduler::Kubernetes { index } => *index,
            Scheduler::Slurm(step) => step.rank,
        }
    }

    /// The variable that gave the index, to name it in logs and errors.
    pub(crate) fn index_variable(&self) -> &'static str {
        match self {
            Scheduler::Kubernetes { .. } => "JOB_COMPLETION_INDEX",
            Scheduler::Slurm(_) => "SLURM_PROCID",
        }
    }
}

impl SlurmStep {
    fn from_env(rank: &str, env: Env) -> Result<SlurmStep> {
        let rank = number("SLURM_PROCID", rank)?;
        let (name, value) = first_set(env, &["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"])?;
        let tasks = number(name, &value)?;
        let (name, value) = first_set(env, &["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"])?;
        let nodes = expand_hostlist(&value).with_context(|| format!("{name}={value}"))?;
        let tasks_per_node =
            match first_set(env, &["SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"]) {
                Ok((name, value)) => {
                    expand_tasks_per_node(&value).with_context(|| format!("{name}={value}"))?
                }
                // Without a count, one task per node.
                Err(_) => vec![1; nodes.len()],
            };
        if tasks_per_node.len() != nodes.len() {
            bail!(
                "Slurm lists {} node(s) but tasks for {} node(s)",
                nodes.len(),
                tasks_per_node.len()
            );
        }
        let laid_out: usize = tasks_per_node.iter().sum();
        if laid_out != tasks || rank >= tasks {
            bail!("Slurm's task rank {rank}, {tasks} task(s) and {laid_out} task slot(s) on its nodes disagree");
        }
        Ok(SlurmStep {
            rank,
            tasks,
            nodes,
            tasks_per_node,
        })
    }

    /// Every task's `host:port`, by rank: block by block over the nodes,
    /// the k-th task of a node on `base_port + k`.
    pub(crate) fn addresses(&self, base_port: u16) -> Result<Vec<String>> {
        let mut addresses = Vec::with_capacity(self.tasks);
        for (node, &count) in self.nodes.iter().zip(&self.tasks_per_node) {
            for k in 0..count {
                let port = u16::try_from(usize::from(base_port) + k)
                    .ok()
                    .with_context(|| {
                        format!("--port {base_port}: {count} tasks on {node} run past port 65535")
                    })?;
                addresses.push(format!("{node}:{port}"));
            }
        }
        Ok(addresses)
    }
}

/// The first of `names` that is set, with its value.
fn first_set(env: Env, names: &[&'static str]) -> Result<(&'static str, String)> {
    for &name in names {
        if let Some(value) = env(name) {
            return Ok((name, value));
        }
    }
    match names {
        [one] => bail!("SLURM_PROCID is set but {one} is not"),
        _ => bail!("SLURM_PROCID is set but neither {} is", names.join(" nor ")),
    }
}

fn number(name: &str, value: &str) -> Result<usize> {
    value
        .trim()
        .parse()
        .ok()
        .with_context(|| format!("{name}={value:?} is not a process number"))
}

/// Expands a Slurm host list: `node[01-03,07],gpu1` is `node01`, `node02`,
/// `node03`, `node07`, `gpu1`. Several bracket groups in one name multiply
/// (`r[1-2]n[1-2]` is `r1n1 r1n2 r2n1 r2n2`); a range keeps the zero
/// padding of its first number.
pub(crate) fn expand_hostlist(list: &str) -> Result<Vec<String>> {
    let mut hosts = Vec::new();
    for name in split_outside_brackets(list)? {
        if name.is_empty() {
            bail!("an empty host name");
        }
        hosts.extend(expand_host(name)?);
    }
    if hosts.is_empty() {
        bail!("no hosts");
    }
    Ok(hosts)
}

/// `list` split at the commas that are not inside brackets.
fn split_outside_brackets(list: &str) -> Result<Vec<&str>> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (at, c) in list.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => bail!("nested brackets"),
            ']' if depth == 1 => depth = 0,
            ']' => bail!("a ']' without its '['"),
            ',' if depth == 0 => {
                parts.push(list[start..at].trim());
                start = at + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        bail!("a '[' without its ']'");
    }
    parts.push(list[start..].trim());
    Ok(parts)
}

/// One host expression's names: the first bracket group's numbers, each
/// followed by every expansion of the rest.
fn expand_host(name: &str) -> Result<Vec<String>> {
    let Some(open) = name.find('[') else {
        return Ok(vec![name.to_string()]);
    };
    let close = open + name[open..].find(']').context("a '[' without its ']'")?;
    let (prefix, ranges, rest) = (&name[..open], &name[open + 1..close], &name[close + 1..]);
    let tails = expand_host(rest)?;
    let mut names = Vec::new();
    for range in ranges.split(',') {
        for number in expand_range(range.trim())? {
            names.extend(tails.iter().map(|tail| format!("{prefix}{number}{tail}")));
        }
    }
    Ok(names)
}

/// `07` or `01-03` as its numbers, padded to the first number's width.
fn expand_range(range: &str) -> Result<Vec<String>> {
    let (low, high) = range.split_once('-').unwrap_or((range, range));
    let parse = |s: &str| -> Result<u64> {
        match !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            true => Ok(s.parse()?),
            false => bail!("{range:?} is not a number or a range of numbers"),
        }
    };
    let (from, to) = (parse(low)?, parse(high)?);
    if to < from {
        bail!("the range {range:?} runs backwards");
    }
    let width = low.len();
    Ok((from..=to).map(|n| format!("{n:0width$}")).collect())
}

/// Expands Slurm's tasks per node: `2(x3),1` is `2 2 2 1`.
pub(crate) fn expand_tasks_per_node(text: &str) -> Result<Vec<usize>> {
    let mut counts = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let (count, times) = match item.split_once("(x") {
            Some((count, times)) => {
                let times = times
                    .strip_suffix(')')
                    .with_context(|| format!("{item:?}: expected N(xM)"))?;
                (count, times)
            }
            None => (item, "1"),
        };
        let count: usize = count
            .parse()
            .ok()
            .with_context(|| format!("{item:?} is not a task count"))?;
        let times: usize = times
            .parse()
            .ok()
            .with_context(|| format!("{item:?} is not a task count"))?;
        counts.extend(std::iter::repeat_n(count, times));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn host_lists_expand_ranges_lists_padding_and_several_groups() {
        let hosts = expand_hostlist("node[01-03,07],gpu5").unwrap();
        assert_eq!(hosts, ["node01", "node02", "node03", "node07", "gpu5"]);
        let hosts = expand_hostlist("r[1-2]-n[8-10]").unwrap();
        assert_eq!(
            hosts,
            ["r1-n8", "r1-n9", "r1-n10", "r2-n8", "r2-n9", "r2-n10"]
        );
        assert_eq!(
            expand_hostlist("a[009-011]").unwrap(),
            ["a009", "a010", "a011"]
        );
        assert_eq!(expand_hostlist("localhost").unwrap(), ["localhost"]);
        for bad in [
            "node[01-", "node01]", "n[3-1]", "n[a-b]", "a,,b", "", "n[[1]]",
        ] {
            assert!(expand_hostlist(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tasks_per_node_expand_repeats() {
        assert_eq!(expand_tasks_per_node("2(x3),1").unwrap(), [2, 2, 2, 1]);
        assert_eq!(expand_tasks_per_node("4").unwrap(), [4]);
        for bad in ["2(x3", "x", "2(xa)", ""] {
            assert!(expand_tasks_per_node(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_slurm_step_lays_tasks_out_block_by_block_with_ports_per_node() {
        let env = env_of(&[
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_NODELIST", "node[01-02,07]"),
            ("SLURM_TASKS_PER_NODE", "2,1(x2)"),
        ]);
        let Some(Scheduler::Slurm(step)) = Scheduler::detect(&env).unwrap() else {
            panic!("no Slurm step found");
        };
        assert_eq!(step.rank, 3);
        assert_eq!(
            step.addresses(4100).unwrap(),
            ["node01:4100", "node01:4101", "node02:4100", "node07:4100"]
        );
    }

    #[test]
    fn a_slurm_step_prefers_the_steps_variables_to_the_jobs() {
        let env = env_of(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_JOB_NODELIST", "node[01-08]"),
            ("SLURM_TASKS_PER_NODE", "1(x8)"),
            ("SLURM_STEP_NUM_TASKS", "2"),
            ("SLURM_STEP_NODELIST", "node[03-04]"),
            ("SLURM_STEP_TASKS_PER_NODE", "1(x2)"),
        ]);
        let Some(Scheduler::Slurm(step)) = Scheduler::detect(&env).unwrap() else {
            panic!("no Slurm step found");
        };
        assert_eq!(
            step.addresses(9000).unwrap(),
            ["node03:9000", "node04:9000"]
        );
        // Without tasks per node: one per node.
        let env = env_of(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_JOB_NODELIST", "a,b"),
        ]);
        let Some(Scheduler::Slurm(step)) = Scheduler::detect(&env).unwrap() else {
            panic!("no Slurm step found");
        };
        assert_eq!(step.addresses(1).unwrap(), ["a:1", "b:1"]);
    }

    #[test]
    fn inconsistent_slurm_variables_get_one_line_naming_them() {
        let cases: [(&[(&str, &str)], &str); 5] = [
            (&[("SLURM_PROCID", "x")], "SLURM_PROCID=\"x\""),
            (
                &[("SLURM_PROCID", "0"), ("SLURM_JOB_NODELIST", "a")],
                "SLURM_PROCID is set but neither SLURM_STEP_NUM_TASKS nor SLURM_NTASKS is",
            ),
            (
                &[
                    ("SLURM_PROCID", "0"),
                    ("SLURM_NTASKS", "2"),
                    ("SLURM_JOB_NODELIST", "n[1-"),
                ],
                "SLURM_JOB_NODELIST=n[1-",
            ),
            (
                &[
                    ("SLURM_PROCID", "0"),
                    ("SLURM_NTASKS", "3"),
                    ("SLURM_JOB_NODELIST", "n[1-2]"),
                ],
                "3 task(s) and 2 task slot(s)",
            ),
            (
                &[
                    ("SLURM_PROCID", "0"),
                    ("SLURM_NTASKS", "2"),
                    ("SLURM_JOB_NODELIST", "n[1-2]"),
                    ("SLURM_TASKS_PER_NODE", "2"),
                ],
                "2 node(s) but tasks for 1 node(s)",
            ),
        ];
        for (vars, expected) in cases {
            let error = format!("{:#}", Scheduler::detect(&env_of(vars)).unwrap_err());
            assert!(error.contains(expected), "{error}");
            assert!(!error.contains('\n'), "{error}");
        }
    }

    #[test]
    fn kubernetes_gives_the_completion_index_and_wins_over_slurm() {
        let env = env_of(&[("JOB_COMPLETION_INDEX", "5"), ("SLURM_PROCID", "1")]);
        let scheduler = Scheduler::detect(&env).unwrap().unwrap();
        assert_eq!(scheduler, Scheduler::Kubernetes { index: 5 });
        assert_eq!(scheduler.process(), 5);
        assert_eq!(Scheduler::detect(&env_of(&[])).unwrap(), None);
        assert!(Scheduler::detect(&env_of(&[("JOB_COMPLETION_INDEX", "-1")])).is_err());
    }
}

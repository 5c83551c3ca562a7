//! Finding and ending every process a program started (Linux).
//!
//! A process group is not enough: a background process that calls `setsid` leaves it, and
//! a killed group leaves it running. Two marks find such a process instead:
//!
//! - The program is made a *child subreaper* before it starts, so while it runs, every
//!   process it started stays below it in the process tree, even one whose own parent has
//!   exited: the walk from the program through `/proc/<pid>/stat` parent links finds them
//!   all, whatever they did.
//! - The program's environment holds [`RUN_VARIABLE`] with a random value, which its
//!   children inherit. After the program has exited (its pid may then belong to someone
//!   else, so the tree is not walked), the processes whose `/proc/<pid>/environ` holds it
//!   are the ones it left behind.
//!
//! What is found is stopped (`SIGSTOP`: a stopped process cannot start another), looked
//! for again until nothing new turns up, then killed.
//!
//! Not found: after the program has exited, a process that emptied its environment or
//! changed it with `exec -c`/`env -i`; a process under another user, or one that made
//! itself unreadable (non-dumpable); a process started through a service manager
//! (`systemd-run`, `at`), which is no descendant at all.

use rustix::process::{kill_process, Pid, Signal};
use std::collections::{HashMap, HashSet};

/// The variable whose value marks a run's processes.
pub(crate) const RUN_VARIABLE: &str = "ATFUNC_RUN_ID";

/// How many times the processes are looked for while stopping them: a program that starts
/// processes faster than they can be stopped is still ended, by the last look's kill.
const ROUNDS: usize = 32;

/// One run's processes: the program, and the mark its descendants carry.
pub(crate) struct Tree {
    root: Pid,
    /// `ATFUNC_RUN_ID=<value>` as it appears in an environment, NUL-terminated.
    mark: Vec<u8>,
    /// When the program started, in clock ticks since boot: an older process cannot be
    /// one it started, so its environment is not read.
    started: u64,
}

/// A process as `/proc/<pid>/stat` describes it.
struct Stat {
    parent: i32,
    started: u64,
    /// A zombie or dead process: nothing to stop, and nothing to read.
    gone: bool,
}

impl Tree {
    /// The run of the program `pid`, started with `RUN_VARIABLE=value`.
    pub(crate) fn new(pid: u32, value: &str) -> Option<Tree> {
        let root = Pid::from_raw(i32::try_from(pid).ok()?)?;
        let started = stat(root.as_raw_nonzero().get()).map_or(0, |s| s.started);
        let mut mark = format!("{RUN_VARIABLE}={value}").into_bytes();
        mark.push(0);
        Some(Tree {
            root,
            mark,
            started,
        })
    }

    /// Stops and kills every process of the run. `root_alive`: the program has not been
    /// waited for, so its pid is still its own (alive or a zombie) and its tree is walked.
    pub(crate) fn end(&self, root_alive: bool) {
        let own = std::process::id();
        let mut stopped: HashSet<i32> = HashSet::new();
        for _ in 0..ROUNDS {
            let found = self.find(root_alive, own);
            let new: Vec<i32> = found.difference(&stopped).copied().collect();
            if new.is_empty() {
                break;
            }
            for pid in new {
                signal(pid, Signal::STOP);
                stopped.insert(pid);
            }
        }
        for pid in stopped {
            signal(pid, Signal::KILL);
        }
    }

    /// Every live process of the run, the program itself included when alive.
    fn find(&self, root_alive: bool, own: u32) -> HashSet<i32> {
        let mut parents: HashMap<i32, Vec<i32>> = HashMap::new();
        let mut found = HashSet::new();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return found;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<i32>().ok())
            else {
                continue;
            };
            if u32::try_from(pid).is_ok_and(|p| p == own) {
                continue;
            }
            let Some(stat) = stat(pid) else {
                continue;
            };
            if stat.gone || stat.started < self.started {
                continue;
            }
            parents.entry(stat.parent).or_default().push(pid);
            if self.marked(pid) {
                found.insert(pid);
            }
        }
        if root_alive {
            let root = self.root.as_raw_nonzero().get();
            found.insert(root);
            let mut visited = HashSet::from([root]);
            let mut queue = vec![root];
            while let Some(pid) = queue.pop() {
                for &child in parents.get(&pid).into_iter().flatten() {
                    if visited.insert(child) {
                        found.insert(child);
                        queue.push(child);
                    }
                }
            }
        }
        found
    }

    /// Whether the environment `pid` started with holds the run's mark.
    fn marked(&self, pid: i32) -> bool {
        match std::fs::read(format!("/proc/{pid}/environ")) {
            // The first variable has no NUL before it.
            Ok(environ) => {
                environ.starts_with(&self.mark)
                    || memchr::memmem::find_iter(&environ, &self.mark)
                        .any(|at| at > 0 && environ.get(at - 1) == Some(&0))
            }
            Err(_) => false,
        }
    }
}

fn signal(pid: i32, signal: Signal) {
    if let Some(pid) = Pid::from_raw(pid) {
        // A process already gone (ESRCH) is what was wanted.
        let _ = kill_process(pid, signal);
    }
}

/// `/proc/<pid>/stat`: `pid (comm) state ppid ...`, the command name may hold spaces and
/// parentheses, so fields are counted from the last `)`.
fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = text.get(text.rfind(')')? + 1..)?;
    let mut fields = after.split_ascii_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    // Field 22 (starttime); `state` was field 3 and `ppid` field 4.
    let started = fields.nth(17)?.parse().ok()?;
    Some(Stat {
        parent,
        started,
        gone: matches!(state, "Z" | "X" | "x"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_stat() {
        let own = i32::try_from(std::process::id()).unwrap_or(1);
        let stat = stat(own).expect("own stat");
        assert!(!stat.gone);
        assert!(stat.parent > 0);
        assert!(stat.started > 0);
    }
}

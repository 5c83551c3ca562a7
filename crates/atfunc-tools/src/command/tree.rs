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
        let mut buffer = Vec::with_capacity(1024);
        let started = read_proc(
            root.as_raw_nonzero().get(),
            "stat",
            &mut String::new(),
            &mut buffer,
        )
        .and_then(parse_stat)
        .map_or(0, |s| s.started);
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
        // One path and one buffer for every file read.
        let mut path = String::with_capacity(32);
        let mut buffer = Vec::with_capacity(4096);
        let root = self.root.as_raw_nonzero().get();
        // Pids are handed out in increasing order until they wrap around: while the last
        // one handed out is not below the program's, every process started since has a
        // pid between the two, and the others' files need not be read at all.
        let newer = last_pid()
            .filter(|&last| last >= root)
            .map(|last| root..=last);
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<i32>().ok())
            else {
                continue;
            };
            if u32::try_from(pid).is_ok_and(|p| p == own)
                || newer.as_ref().is_some_and(|range| !range.contains(&pid))
            {
                continue;
            }
            let Some(stat) = read_proc(pid, "stat", &mut path, &mut buffer).and_then(parse_stat)
            else {
                continue;
            };
            if stat.gone || stat.started < self.started {
                continue;
            }
            if root_alive {
                parents.entry(stat.parent).or_default().push(pid);
            }
            if read_proc(pid, "environ", &mut path, &mut buffer).is_some_and(|e| self.marked(e)) {
                found.insert(pid);
            }
        }
        if root_alive {
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

    /// Whether an environment (`/proc/<pid>/environ`) holds the run's mark.
    fn marked(&self, environ: &[u8]) -> bool {
        // The first variable has no NUL before it.
        environ.starts_with(&self.mark)
            || memchr::memmem::find_iter(environ, &self.mark)
                .any(|at| at > 0 && environ.get(at - 1) == Some(&0))
    }
}

/// The last pid handed out in this process's pid namespace, where the system says.
fn last_pid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `/proc/<pid>/<file>` read into `buffer`, with `path` as scratch space.
fn read_proc<'b>(
    pid: i32,
    file: &str,
    path: &mut String,
    buffer: &'b mut Vec<u8>,
) -> Option<&'b [u8]> {
    use std::fmt::Write as _;
    use std::io::Read as _;
    path.clear();
    let _ = write!(path, "/proc/{pid}/{file}");
    buffer.clear();
    let mut file = std::fs::File::open(&*path).ok()?;
    // Plain reads into a chunk of the buffer: proc files have no size to ask for first,
    // and one that fits takes one read and the one that says it ended.
    let mut chunk = [0u8; 4096];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => return Some(buffer),
            Ok(n) => buffer.extend_from_slice(chunk.get(..n)?),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

fn signal(pid: i32, signal: Signal) {
    if let Some(pid) = Pid::from_raw(pid) {
        // A process already gone (ESRCH) is what was wanted.
        let _ = kill_process(pid, signal);
    }
}

/// `/proc/<pid>/stat`: `pid (comm) state ppid ...`; the command name may hold spaces and
/// parentheses, so fields are counted from the last `)`.
fn parse_stat(text: &[u8]) -> Option<Stat> {
    let after = text.get(memchr::memrchr(b')', text)? + 1..)?;
    let mut fields = after
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty());
    let number = |field: &[u8]| std::str::from_utf8(field).ok()?.parse().ok();
    let state = fields.next()?;
    let parent = number(fields.next()?)?;
    // Field 22 (starttime); `state` was field 3 and `ppid` field 4.
    let started = number(fields.nth(17)?)?;
    Some(Stat {
        parent: i32::try_from(parent).ok()?,
        started,
        gone: matches!(state, b"Z" | b"X" | b"x"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_parentheses_and_spaces_is_skipped() {
        let line = b"42 (a) b (c) S 7 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
        let stat = parse_stat(line).expect("parsed");
        assert_eq!((stat.parent, stat.started, stat.gone), (7, 12345, false));
        assert!(parse_stat(b"1 (x) Z 0").is_none());
    }

    #[test]
    fn this_process_has_a_stat() {
        let own = i32::try_from(std::process::id()).unwrap_or(1);
        let mut buffer = Vec::new();
        let stat = read_proc(own, "stat", &mut String::new(), &mut buffer)
            .and_then(parse_stat)
            .expect("own stat");
        assert!(!stat.gone);
        assert!(stat.parent > 0);
        assert!(stat.started > 0);
    }
}

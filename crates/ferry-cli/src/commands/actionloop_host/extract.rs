//! The action's code from `/init` to an `exec` file on disk: a zip (`binary: true`, base64) with
//! `exec` at its top level, or a script sent as text.
//!
//! The host runs whatever `exec` it finds, so nothing another user could have placed is trusted:
//! the default work directory is new (mode 0700) and every `/init` unpacks into a directory of
//! its own made inside it, whose files are all created new (`O_CREAT | O_EXCL`, which also
//! refuses to follow a link). Zip entries that are links or that name a path outside that
//! directory are refused.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{Cursor, ErrorKind};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context as _, bail};

/// How far `new_action_dir` looks for a free name.
const MOST_ACTION_DIRS: usize = 10_000;

/// Where actions are unpacked; removed on exit as far as this host made it.
pub struct WorkDir {
    path: PathBuf,
    /// The host made `path` itself, so removes all of it; otherwise only its action directories.
    made: bool,
    /// The action directories made so far, one per `/init` attempt.
    actions: Mutex<Vec<PathBuf>>,
}

impl WorkDir {
    /// A new directory under the temp dir with a random name, mode 0700: never one that exists.
    pub fn fresh() -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("ferry-actionloop-")
            .permissions(Permissions::from_mode(0o700))
            .tempdir()
            .context("cannot create a work directory under the temp dir")?;
        Ok(Self {
            path: dir.keep(),
            made: true,
            actions: Mutex::new(Vec::new()),
        })
    }

    /// `--workdir`: made (0700) when missing; an existing one must be this user's and writable
    /// by no one else, since whoever can write it could swap the action.
    pub fn at(path: &Path) -> anyhow::Result<Self> {
        let create = || DirBuilder::new().mode(0o700).create(path);
        let mut created = create();
        if let (Err(e), Some(parent)) = (&created, path.parent())
            && e.kind() == ErrorKind::NotFound
        {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
            created = create();
        }
        // Only a directory this mkdir made counts as made here (and is removed on exit).
        let made = match created {
            Ok(()) => true,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => false,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create `{}`", path.display()));
            }
        };
        if !made {
            let meta = std::fs::metadata(path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            // SAFETY: geteuid has no preconditions and cannot fail.
            let uid = unsafe { libc::geteuid() };
            if !meta.is_dir() {
                bail!("`{}` is not a directory", path.display());
            }
            if meta.uid() != uid || meta.mode() & 0o022 != 0 {
                bail!(
                    "`{}` must belong to this user and be writable by no one else",
                    path.display()
                );
            }
        }
        Ok(Self {
            path: path.to_owned(),
            made,
            actions: Mutex::new(Vec::new()),
        })
    }

    /// Makes a new action directory: the first free number from 1 on. Names already taken
    /// (left by an earlier host, say) are skipped, never entered.
    pub fn new_action_dir(&self) -> anyhow::Result<PathBuf> {
        let mut actions = self
            .actions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut number = actions.len() + 1;
        loop {
            let dir = self.path.join(number.to_string());
            // Not recursive: mkdir fails on anything already there, a link included.
            match DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    actions.push(dir.clone());
                    return Ok(dir);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists && number < MOST_ACTION_DIRS => {
                    number += 1;
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create `{}`", dir.display()));
                }
            }
        }
    }

    /// Removes an action directory whose `/init` failed.
    pub fn discard(&self, dir: &Path) {
        // remove_dir_all does not follow links inside the tree.
        let _ = std::fs::remove_dir_all(dir);
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.made {
            let _ = std::fs::remove_dir_all(&self.path);
        } else {
            let actions = self
                .actions
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for dir in actions.iter() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

/// Writes the action into `dir`, a directory just made for it, and returns its executable.
pub fn install(dir: &Path, code: &str, binary: bool) -> anyhow::Result<PathBuf> {
    let exec = dir.join("exec");
    if binary {
        let zip = base64_simd::STANDARD
            .decode_to_vec(code.trim())
            .context("the code is not valid base64")?;
        unzip(dir, zip)?;
        let meta = std::fs::symlink_metadata(&exec)
            .ok()
            .filter(std::fs::Metadata::is_file);
        if meta.is_none() {
            bail!("the action zip has no `exec` at its top level");
        }
    } else {
        let mut file = create(&exec)?;
        std::io::Write::write_all(&mut file, code.as_bytes())
            .with_context(|| format!("cannot write `{}`", exec.display()))?;
        chmod(&file, &exec, 0o755)?;
    }
    Ok(exec)
}

fn unzip(dir: &Path, zip: Vec<u8>) -> anyhow::Result<()> {
    let mut archive =
        zip::ZipArchive::new(Cursor::new(zip)).context("the code is not a zip archive")?;
    for index in 0..archive.len() {
        let mut entry = archive
            .by_index(index)
            .context("the action zip is damaged")?;
        let name = entry
            .name()
            .context("the action zip has an unreadable name")?
            .into_owned();
        let Some(relative) = inside(&name) else {
            bail!("the action zip's entry `{name}` points outside the action directory");
        };
        if entry.is_symlink() {
            bail!("the action zip's entry `{name}` is a symbolic link, which is not allowed");
        }
        let path = dir.join(&relative);
        if entry.is_dir() {
            // Every directory under `dir` was made here, so none of them is a link.
            std::fs::create_dir_all(&path)
                .with_context(|| format!("cannot create `{}`", path.display()))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
        let mut file = create(&path)?;
        std::io::copy(&mut entry, &mut file)
            .with_context(|| format!("cannot extract `{name}` from the action zip"))?;
        // No set-id bits from an archive; `exec` is made runnable whatever the zip says.
        let mode = if relative == Path::new("exec") {
            0o755
        } else {
            entry.unix_mode().map_or(0o644, |mode| mode & 0o777)
        };
        chmod(&file, &path, mode)?;
    }
    Ok(())
}

/// The entry's path relative to the action directory, or `None` when it is absolute or climbs
/// out with `..` (refused even when it would come back in, to keep the check simple).
fn inside(name: &str) -> Option<PathBuf> {
    if name.contains('\0') || name.starts_with(['/', '\\']) {
        return None;
    }
    if name.split(['/', '\\']).any(|part| part == "..") {
        return None;
    }
    let path: PathBuf = Path::new(name)
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    let normal = path.components().all(|c| matches!(c, Component::Normal(_)));
    (normal && !path.as_os_str().is_empty()).then_some(path)
}

/// A new file: `O_EXCL` fails on anything already at `path`, a dangling link included.
fn create(path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() == ErrorKind::AlreadyExists {
                anyhow::anyhow!("`{}` already exists", path.display())
            } else {
                anyhow::Error::new(e).context(format!("cannot create `{}`", path.display()))
            }
        })
}

/// Sets the mode on the open file (fchmod), never on whatever `path` names by then.
fn chmod(file: &File, path: &Path, mode: u32) -> anyhow::Result<()> {
    file.set_permissions(Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of `{}`", path.display()))
}

#[cfg(test)]
mod tests {
    use super::inside;
    use std::path::Path;

    #[test]
    fn entries_must_stay_inside() {
        assert_eq!(inside("exec").as_deref(), Some(Path::new("exec")));
        assert_eq!(inside("./lib/a.py").as_deref(), Some(Path::new("lib/a.py")));
        assert_eq!(inside("lib/").as_deref(), Some(Path::new("lib")));
        for bad in [
            "../exec",
            "lib/../../exec",
            "a/../b",
            "/etc/passwd",
            "\\x",
            "..\\x",
            "",
            ".",
            "a\0b",
        ] {
            assert_eq!(inside(bad), None, "{bad:?}");
        }
    }
}

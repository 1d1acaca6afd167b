//! A node's disk, in memory, under redb: writes land in a cache that reads
//! see at once and reach the platter only at `sync_data`. A power cut keeps a
//! seeded part of what was written since the last sync (a disk may have
//! written any of it, in any order) and loses the rest; every handle opened
//! before the cut is dead from then on, so nothing a crashed node still
//! does reaches the disk. It models whole writes only, never torn sectors.
//! A disk can also be made to lie about syncs, to show the checks catch it.

use std::{
    fmt, io,
    sync::{Arc, Mutex, MutexGuard},
};

use rand::{RngExt as _, SeedableRng, rngs::StdRng};

/// One write or resize redb asked for since the last sync.
enum Op {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

impl Op {
    fn apply(&self, bytes: &mut Vec<u8>) {
        match self {
            Op::Write { offset, data } => write_at(bytes, *offset, data),
            Op::SetLen(len) => bytes.resize(to_usize(*len), 0),
        }
    }
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).expect("a simulated disk fits in memory")
}

fn write_at(bytes: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let start = to_usize(offset);
    let end = start + data.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[start..end].copy_from_slice(data);
}

/// Whether a sync makes the writes before it durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syncs {
    /// A sync returns once everything written before it is durable.
    Honest,
    /// A sync returns at once and makes durable only what the sync before
    /// it covered: acknowledged writes can be lost (a broken disk cache).
    OneBehind,
}

struct DiskState {
    syncs: Syncs,
    /// What reads see: everything written so far.
    cached: Vec<u8>,
    /// What the platter holds as of the last sync.
    synced: Vec<u8>,
    /// Writes and resizes since the last sync, oldest first.
    unsynced: Vec<Op>,
    /// Writes a lying sync acknowledged but did not make durable.
    acknowledged: Vec<Op>,
    /// Bumped by each power cut; handles of an earlier cycle are dead.
    power_cycle: u64,
    /// Cut the power when this many more writes or syncs are attempted.
    cut_after: Option<u32>,
    /// Chooses which unsynced writes a cut keeps.
    rng: StdRng,
    /// Unsynced writes lost to power cuts so far.
    lost: u64,
}

impl DiskState {
    fn cut_power(&mut self) {
        if self.syncs == Syncs::OneBehind {
            // The cache is gone: acknowledged writes with it.
            self.lost += (self.acknowledged.len() + self.unsynced.len()) as u64;
            self.acknowledged.clear();
            self.unsynced.clear();
        }
        for op in std::mem::take(&mut self.unsynced) {
            if self.rng.random_bool(0.5) {
                op.apply(&mut self.synced);
            } else {
                self.lost += 1;
            }
        }
        self.cached = self.synced.clone();
        self.power_cycle += 1;
        self.cut_after = None;
    }

    /// Counts one write or sync towards an armed power cut; true when it cuts.
    fn cut_now(&mut self) -> bool {
        match &mut self.cut_after {
            Some(0) => {
                self.cut_power();
                true
            }
            Some(n) => {
                *n -= 1;
                false
            }
            None => false,
        }
    }
}

/// A node's disk, shared by every life of the node.
#[derive(Clone)]
pub struct SimDisk(Arc<Mutex<DiskState>>);

impl SimDisk {
    /// An empty disk; `seed` chooses what its power cuts keep.
    pub fn new(seed: u64, syncs: Syncs) -> SimDisk {
        SimDisk(Arc::new(Mutex::new(DiskState {
            syncs,
            acknowledged: Vec::new(),
            cached: Vec::new(),
            synced: Vec::new(),
            unsynced: Vec::new(),
            power_cycle: 0,
            cut_after: None,
            rng: StdRng::seed_from_u64(seed),
            lost: 0,
        })))
    }

    fn state(&self) -> MutexGuard<'_, DiskState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A backend for redb, alive until the next power cut.
    pub fn power_on(&self) -> DiskHandle {
        DiskHandle {
            disk: self.clone(),
            cycle: self.state().power_cycle,
        }
    }

    /// The current power cycle (a node's life is alive while it matches).
    pub fn power_cycle(&self) -> u64 {
        self.state().power_cycle
    }

    /// Cuts the power now.
    pub fn cut_power(&self) {
        self.state().cut_power();
    }

    /// Cuts the power at the `ops`-th write or sync from now (0: the next
    /// one), which then fails: a crash in the middle of whatever the node is
    /// writing.
    pub fn cut_power_after(&self, ops: u32) {
        self.state().cut_after = Some(ops);
    }

    /// Takes back a power cut armed by [`SimDisk::cut_power_after`].
    pub fn disarm(&self) {
        self.state().cut_after = None;
    }

    /// Unsynced writes lost to power cuts so far.
    pub fn lost_writes(&self) -> u64 {
        self.state().lost
    }
}

/// The disk as one opened redb database sees it.
pub struct DiskHandle {
    disk: SimDisk,
    cycle: u64,
}

impl fmt::Debug for DiskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DiskHandle(power cycle {})", self.cycle)
    }
}

impl DiskHandle {
    /// The disk, if this handle's power cycle is still the current one.
    fn powered(&self) -> io::Result<MutexGuard<'_, DiskState>> {
        let state = self.disk.state();
        if state.power_cycle == self.cycle {
            Ok(state)
        } else {
            Err(io::Error::other("the disk lost power (simulated crash)"))
        }
    }
}

fn power_cut() -> io::Error {
    io::Error::other("power cut during this operation (simulated crash)")
}

impl redb::StorageBackend for DiskHandle {
    fn len(&self) -> io::Result<u64> {
        Ok(self.powered()?.cached.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let state = self.powered()?;
        let start = to_usize(offset);
        let bytes = state
            .cached
            .get(start..start + out.len())
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))?;
        out.copy_from_slice(bytes);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut state = self.powered()?;
        let op = Op::SetLen(len);
        op.apply(&mut state.cached);
        state.unsynced.push(op);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut state = self.powered()?;
        if state.cut_now() {
            return Err(power_cut());
        }
        let DiskState {
            syncs,
            synced,
            unsynced,
            acknowledged,
            ..
        } = &mut *state;
        let durable = match syncs {
            Syncs::Honest => std::mem::take(unsynced),
            Syncs::OneBehind => std::mem::replace(acknowledged, std::mem::take(unsynced)),
        };
        for op in durable {
            op.apply(synced);
        }
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut state = self.powered()?;
        if state.cut_now() {
            return Err(power_cut());
        }
        write_at(&mut state.cached, offset, data);
        state.unsynced.push(Op::Write {
            offset,
            data: data.to_vec(),
        });
        Ok(())
    }
}

#[test]
fn a_power_cut_keeps_synced_writes_and_kills_old_handles() {
    use redb::StorageBackend as _;
    let disk = SimDisk::new(7, Syncs::Honest);
    let before = disk.power_on();
    before.write(0, b"synced").unwrap();
    before.sync_data().unwrap();
    before.write(0, b"SYNCED").unwrap();
    disk.cut_power();
    assert!(
        before.len().is_err(),
        "a handle from before the cut is dead"
    );
    let after = disk.power_on();
    let mut read = [0u8; 6];
    after.read(0, &mut read).unwrap();
    assert!(
        &read == b"synced" || &read == b"SYNCED",
        "the synced write, or the unsynced one over it: {read:?}"
    );
    disk.cut_power_after(0);
    assert!(
        after.write(0, b"lost!!").is_err(),
        "the armed cut fails the write"
    );
    let again = disk.power_on();
    again.read(0, &mut read).unwrap();
    assert_ne!(&read, b"lost!!");
}

#[test]
fn a_lying_disk_loses_the_last_acknowledged_sync() {
    use redb::StorageBackend as _;
    let disk = SimDisk::new(7, Syncs::OneBehind);
    let handle = disk.power_on();
    handle.write(0, b"first").unwrap();
    handle.sync_data().unwrap();
    handle.write(0, b"again").unwrap();
    handle.sync_data().unwrap();
    disk.cut_power();
    let mut read = [0u8; 5];
    disk.power_on().read(0, &mut read).unwrap();
    assert_eq!(&read, b"first");
}

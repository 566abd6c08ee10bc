package soak

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// Ways to fill the file's disk (Config.Disk).
const (
	// DiskAuto: DiskTmpfs where a tmpfs can be mounted, else DiskRlimit.
	DiskAuto = "auto"
	// DiskTmpfs: the cache file lives on a tmpfs of Config.DiskSize that
	// the soak mounts (in mount and user namespaces of its own: see the
	// soak command) and fills with a file until ENOSPC: what a full
	// volume does to the controller's writes.
	DiskTmpfs = "tmpfs"
	// DiskRlimit: the controller's RLIMIT_FSIZE is lowered to the file's
	// size (prlimit): a write or a growth past it fails with EFBIG,
	// which the library does not take for a full disk (ErrDiskFull is
	// ENOSPC or EDQUOT) but retries all the same; writes into the file's
	// free pages still succeed. Needs no privilege.
	DiskRlimit = "rlimit"
	// DiskNone: no disk-full fault.
	DiskNone = "none"
)

// disk is where the cache file lives, and how it is filled.
type disk struct {
	dir  string
	mode string // DiskTmpfs, DiskRlimit or DiskNone
	// filler is the file that fills a tmpfs, while it is full.
	filler string
	// limited is the process whose file size is limited, while it is.
	limited int
}

// mountTmpfs mounts a private tmpfs of size bytes on dir. It needs the
// privilege to mount in the current mount namespace.
func mountTmpfs(dir string, size int64) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("soak: make the mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return fmt.Errorf("soak: mount a tmpfs on %s: %w", dir, err)
	}
	return nil
}

// fill fills the disk: a tmpfs with a file until ENOSPC, or the
// controller pid's file size limit down to the file's size. It returns
// what it did.
func (d *disk) fill(pid int, file string) (string, error) {
	switch d.mode {
	case DiskTmpfs:
		d.filler = filepath.Join(d.dir, "filler")
		f, err := os.Create(d.filler)
		if err != nil {
			return "", fmt.Errorf("soak: fill %s: %w", d.dir, err)
		}
		defer f.Close()
		chunk := make([]byte, 1<<20)
		var n int64
		for {
			w, err := f.Write(chunk)
			n += int64(w)
			if errors.Is(err, syscall.ENOSPC) {
				return fmt.Sprintf("tmpfs filled with %d MiB", n>>20), nil
			}
			if err != nil {
				return "", fmt.Errorf("soak: fill %s: %w", d.dir, err)
			}
		}
	case DiskRlimit:
		fi, err := os.Stat(file)
		if err != nil {
			return "", fmt.Errorf("soak: fill: %w", err)
		}
		var old unix.Rlimit
		lim := unix.Rlimit{Cur: uint64(fi.Size()), Max: unix.RLIM_INFINITY}
		if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, &old); err != nil {
			return "", fmt.Errorf("soak: limit the file size of process %d: %w", pid, err)
		}
		d.limited = pid
		return fmt.Sprintf("RLIMIT_FSIZE of the controller at %d bytes", fi.Size()), nil
	}
	return "skipped: no disk-full fault (-disk none)", nil
}

// free undoes fill.
func (d *disk) free() error {
	switch {
	case d.filler != "":
		err := os.Remove(d.filler)
		d.filler = ""
		if err != nil {
			return fmt.Errorf("soak: free %s: %w", d.dir, err)
		}
	case d.limited != 0:
		lim := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
		err := unix.Prlimit(d.limited, unix.RLIMIT_FSIZE, &lim, nil)
		d.limited = 0
		if err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("soak: lift the file size limit: %w", err)
		}
	}
	return nil
}

// damage describes a damaged page.
type damage struct {
	Page     int
	Type     string // bbolt's: branch or leaf
	Header   bool   // the page header was overwritten too
	PageSize int
}

func (d damage) String() string {
	what := "its content"
	if d.Header {
		what = "header and content"
	}
	return fmt.Sprintf("%s page %d (%d bytes), %s overwritten with random bytes", d.Type, d.Page, d.PageSize, what)
}

// damagePage overwrites one page of the bbolt file at path that holds
// part of the tree (a branch or leaf page, not a free one) with random
// bytes, its header included or not. The file must not be open. copyDir
// receives a scratch copy of the file: bbolt lists the pages' types of
// the copy, so that the file itself is opened by nobody but its owner.
func damagePage(path, copyDir string, rng *rand.Rand) (damage, error) {
	scratch := filepath.Join(copyDir, "damage-scratch.db")
	defer os.Remove(scratch)
	if err := copyFile(path, scratch); err != nil {
		return damage{}, err
	}
	db, err := bbolt.Open(scratch, 0o600, &bbolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: 5 * time.Second})
	if err != nil {
		return damage{}, fmt.Errorf("soak: open a copy of %s: %w", path, err)
	}
	var pages []damage
	err = db.View(func(tx *bbolt.Tx) error {
		for id := 2; ; id++ {
			info, err := tx.Page(id)
			if err != nil {
				return err
			}
			if info == nil {
				return nil
			}
			if info.Type == "branch" || info.Type == "leaf" {
				pages = append(pages, damage{Page: id, Type: info.Type})
				id += info.OverflowCount
			}
		}
	})
	pageSize := db.Info().PageSize
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return damage{}, fmt.Errorf("soak: list the pages of %s: %w", path, err)
	}
	if len(pages) == 0 {
		return damage{}, fmt.Errorf("soak: %s has no branch or leaf page", path)
	}
	d := pages[rng.IntN(len(pages))]
	d.PageSize, d.Header = pageSize, rng.IntN(2) == 0
	junk := make([]byte, pageSize)
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	off := int64(d.Page) * int64(pageSize)
	if !d.Header {
		const headerSize = 16 // id, flags, count, overflow
		junk, off = junk[headerSize:], off+headerSize
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return damage{}, fmt.Errorf("soak: damage %s: %w", path, err)
	}
	_, err = f.WriteAt(junk, off)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return damage{}, fmt.Errorf("soak: damage %s: %w", path, err)
	}
	return d, nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("soak: copy %s: %w", from, err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return fmt.Errorf("soak: copy %s: %w", from, err)
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("soak: copy %s to %s: %w", from, to, err)
	}
	return nil
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/warmcache/warmcache/store/bolt"
	"github.com/warmcache/warmcache/store/bolt/inspect"
	"github.com/warmcache/warmcache/store/codec"
)

// snapshotFile is a cache file opened for inspection: read-only, its
// resources listed. It is used by one goroutine. bolt.Open holds a shared
// lock on the file until Close, so that no process writes the file while
// it is read; a controller that starts meanwhile does not wait for it, it
// replaces the file at the path with a copy and writes that (see
// store/bolt's lock.go), and the command keeps reading the file it opened.
type snapshotFile struct {
	path string
	info os.FileInfo
	db   *bolt.DB
	// resources are the file's resources but the samples a factory keeps
	// (bolt.Identity.IsSample): what every command shows. all holds
	// every resource the file records, samples included: what verify
	// checks and compact copies.
	resources, all []inspect.ResourceInfo
	diag           *sinkState
	stores         map[string]*bolt.Store // by recorded identity string
	// recorded maps the identity of a resource whose kind the CLI
	// derived (see deriveKinds) to the identity the file records.
	recorded map[string]bolt.Identity
	// crds are the file's CRDs, read on first use (loadCRDs).
	crds map[schema.GroupResource]crdDef
	// codecs resolves recorded codec names, sealed ones with the keys of
	// --key-file.
	codecs func(name string) (codec.Codec, error)
	// keyChecks are the key checks of sealed resources, by recorded
	// identity string (see checkKeys).
	keyChecks map[string]keyCheck
	// keyStores holds the identity strings of stores opened by keyStore.
	keyStores map[string]bool
}

// openOptions configures openSnapshot.
type openOptions struct {
	// Timeout bounds the wait for the lock.
	Timeout time.Duration
	// UnsafeIgnoreState opens a file its state file does not vouch for
	// (bolt.Options.UnsafeIgnoreState).
	UnsafeIgnoreState bool
	// KeyFile holds the keys of sealed resources; "" reads none.
	KeyFile string
}

// resolveCodec is the default codec resolver: the codecs of store/codec
// with client-go's kubernetes scheme.
func resolveCodec(name string) (codec.Codec, error) { return codec.ByName(nil, name) }

// openSnapshot opens the cache file at path for reading. Every failure is
// an error ExitCode maps to a distinct exit code, with a hint saying what
// to do: a missing file (not found), a directory or special file (usage),
// an empty, garbage, truncated or foreign file (corrupt), a newer format
// (corrupt), a file held by a running process (locked).
func openSnapshot(ctx context.Context, env *Env, path string, opts openOptions) (*snapshotFile, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, withHint(mark(ErrNotFound, "file %s does not exist", path),
			"Give the path of a warmcache cache file (the factory.Options.Path of a controller, or the file it passes to bolt.Open).")
	case err != nil:
		return nil, fmt.Errorf("cannot read %s: %w", path, pathCause(err))
	case fi.IsDir():
		return nil, usageErrorf("%s is a directory, not a cache file", path)
	case !fi.Mode().IsRegular():
		return nil, usageErrorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	case fi.Size() == 0:
		return nil, withHint(mark(bolt.ErrCorrupt, "%s is empty (0 bytes), not a warmcache cache file", path),
			"A controller starting on it would initialise it; there is nothing to inspect.")
	}
	keys, err := loadKeys(ctx, opts.KeyFile)
	if err != nil {
		return nil, err
	}
	logger, diag := newDiagLogger(env.Stderr)
	// No hot tier: the CLI reads each object once (a sort reads it again by
	// key), so keeping decoded objects would only hold them on the heap.
	var noHot int64
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = time.Nanosecond // --lock-timeout 0 tries once; bolt's 0 is its default
	}
	db, err := bolt.Open(ctx, path, bolt.Options{ReadOnly: true, Timeout: timeout, Logger: logger, UnsafeIgnoreState: opts.UnsafeIgnoreState, HotBytes: &noHot})
	if err != nil {
		return nil, explainOpenError(path, err)
	}
	f := &snapshotFile{path: path, info: fi, db: db, diag: diag, stores: map[string]*bolt.Store{}, recorded: map[string]bolt.Identity{}, codecs: codecResolver(keys),
		keyChecks: map[string]keyCheck{}, keyStores: map[string]bool{}}
	if f.all, err = inspect.Resources(ctx, db); err != nil {
		_ = f.Close()
		return nil, explainOpenError(path, err)
	}
	for _, r := range f.all {
		if !r.Identity.IsSample() {
			f.resources = append(f.resources, r)
		}
	}
	f.deriveKinds(ctx)
	return f, nil
}

// pathCause is the cause of a *fs.PathError, whose message would repeat
// the path the caller already names; other errors are returned as they
// are. The cause keeps matching fs.ErrNotExist, fs.ErrPermission, ....
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// explainOpenError turns an error of opening or first reading path into
// one that says what to do.
func explainOpenError(path string, err error) error {
	var verr *bolt.VersionError
	switch {
	case errors.Is(err, bolt.ErrLocked):
		return withHint(fmt.Errorf("%s is locked by a running process (a controller has it open for writing): %w", path, err),
			"Read that process's cache with 'snapshot backup URL --output copy.db' from its backup endpoint (bolt.DB.BackupHandler) and inspect the copy,\n"+
				"or stop the process, or wait longer with --lock-timeout.")
	case errors.As(err, &verr):
		return withHint(fmt.Errorf("%s was written by a newer warmcache (%w)", path, err),
			"Use the snapshot command of the warmcache release that wrote the file.")
	case errors.Is(err, bolt.ErrUnflushed):
		return withHint(fmt.Errorf("%s may be torn: %w", path, err),
			"To look at it anyway, give --unsafe-ignore-state: what it shows may be wrong.")
	case errors.Is(err, bolt.ErrCorrupt):
		return withHint(fmt.Errorf("%s is not a readable warmcache cache file: %w", path, err),
			"It is a cache: the objects it held are on the API server.")
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot read %s: %w", path, err)
	}
	return err
}

// Close closes the file and releases the lock.
func (f *snapshotFile) Close() error { return f.db.Close() }

// errUnknownCodec is returned when reading objects of a codec this binary
// does not know.
var errUnknownCodec = errors.New("codec unknown to this snapshot binary")

// namesOnly is the codec used to open a resource whose codec is unknown,
// for what needs no decoding (index values, keys, resourceVersions).
type namesOnly struct{ name string }

func (c namesOnly) Name() string { return c.name }
func (c namesOnly) Encode([]byte, runtime.Object) ([]byte, error) {
	return nil, fmt.Errorf("%w: %q", errUnknownCodec, c.name)
}
func (c namesOnly) Decode([]byte) (runtime.Object, error) {
	return nil, fmt.Errorf("%w: %q", errUnknownCodec, c.name)
}

// keysOnly is the codec of a resource read for its keys alone (-o name of
// a sealed resource, whose names are stored in clear): Decode returns an
// object without fields, which the reader replaces by keyObject of its
// key. Nothing is decrypted or decoded.
type keysOnly struct{ name string }

func (c keysOnly) Name() string { return c.name }
func (c keysOnly) Encode([]byte, runtime.Object) ([]byte, error) {
	return nil, fmt.Errorf("%w: %q is open for its keys only", errUnknownCodec, c.name)
}
func (c keysOnly) Decode([]byte) (runtime.Object, error) { return &metav1.PartialObjectMetadata{}, nil }

// keyStore opens the recorded resource for its keys, labels and index
// entries alone (keysOnly): its objects are not decoded.
func (f *snapshotFile) keyStore(ctx context.Context, info inspect.ResourceInfo) (*bolt.Store, error) {
	if err := checkReadable(f.path, info); err != nil {
		return nil, err
	}
	id := f.recordedID(info)
	name := id.String()
	if s := f.stores[name]; s != nil {
		if !f.keyStores[name] {
			return nil, fmt.Errorf("%s: %s is open for its objects already", f.path, displayName(info))
		}
		return s, nil
	}
	s, err := inspect.OpenRecorded(ctx, f.db, id, keysOnly{name: info.Codec})
	if err != nil {
		return nil, explainOpenError(f.path, err)
	}
	f.stores[name], f.keyStores[name] = s, true
	return s, nil
}

// checkReadable returns an error for a resource whose objects this binary
// cannot read: unreadable meta, or a schema version it does not know.
func checkReadable(path string, info inspect.ResourceInfo) error {
	switch {
	case info.Problem != "":
		return withHint(mark(bolt.ErrCorrupt, "%s: resource metadata unreadable: %s", path, info.Problem),
			"Run 'snapshot verify %s' for the whole picture.", shellQuote(path))
	case info.Schema > inspect.SchemaVersion:
		return withHint(fmt.Errorf("%s: %s: %w", path, displayName(info), &bolt.VersionError{What: "resource schema", Found: info.Schema, Supported: inspect.SchemaVersion}),
			"Use the snapshot command of the warmcache release that wrote the file.")
	case info.Schema != inspect.SchemaVersion:
		return withHint(mark(bolt.ErrCorrupt, "%s: %s: resource schema version %d is not readable (this snapshot reads version %d)",
			path, displayName(info), info.Schema, inspect.SchemaVersion),
			"An older warmcache release wrote it: read it with the snapshot command of that release.")
	}
	return nil
}

// recordedID is the identity the file records for info (info's own
// unless the CLI derived its kind: see deriveKinds).
func (f *snapshotFile) recordedID(info inspect.ResourceInfo) bolt.Identity {
	if orig, ok := f.recorded[info.Identity.String()]; ok {
		return orig
	}
	return info.Identity
}

// store opens the recorded resource. With decode false, a resource of an
// unknown codec opens with namesOnly (keys, index values and RVs work;
// decoding fails); with decode true an unknown codec is an error.
func (f *snapshotFile) store(ctx context.Context, info inspect.ResourceInfo, decode bool) (*bolt.Store, error) {
	if err := checkReadable(f.path, info); err != nil {
		return nil, err
	}
	c, err := f.codecs(info.Codec)
	if decode && (err == nil || errors.Is(err, errSealed)) {
		// Objects sealed with keys --key-file does not hold are a
		// missing key, not damage.
		if err := f.checkKeys(ctx, info); err != nil {
			return nil, err
		}
	}
	if err != nil {
		if decode && !errors.Is(err, errSealed) {
			return nil, withHint(mark(bolt.ErrCorrupt, "%s: %s: %w", f.path, displayName(info), err),
				"The file was written with a codec this snapshot does not know; use the snapshot command of the same warmcache release.")
		}
		c = namesOnly{name: info.Codec}
	}
	id := f.recordedID(info)
	name := id.String()
	if s := f.stores[name]; s != nil {
		if f.keyStores[name] {
			return nil, fmt.Errorf("%s: %s is open for its keys only", f.path, displayName(info))
		}
		return s, nil
	}
	s, err := inspect.OpenRecorded(ctx, f.db, id, c)
	if err != nil {
		return nil, explainOpenError(f.path, err)
	}
	f.stores[name] = s
	return s, nil
}

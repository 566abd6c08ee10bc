// Command snapshot inspects the bbolt files in which warmcache informers keep
// their cache.
//
// It never writes the file it inspects: files are opened read-only under a
// shared lock, and only compact and backup write, to the file their
// --output names. A file that a running controller holds open for writing
// is locked; fetch a consistent copy from the process with snapshot backup
// and inspect the copy. A controller that starts while snapshot reads its
// file does not wait: it writes a copy of the file, and snapshot keeps
// reading what it opened (see docs/deployment.md). Data goes to standard output; errors, warnings and
// progress bars (on a terminal only) to standard error.
//
// # Install
//
//	go install github.com/warmcache/warmcache/cmd/snapshot@latest
//	source <(snapshot completion bash)   # or zsh, fish, powershell
//
// # Commands
//
//	snapshot info FILE [-o text|json|yaml]
//	    Per resource: group, version, resource, kind, list/watch scope, object
//	    count, resourceVersion, complete or relist-interrupted, schema version,
//	    codec, indexes with their number of values, bytes used; the file's size
//	    and last write. Answers from recorded counts, without reading objects.
//
//	snapshot list FILE TYPE[,TYPE...] [-n NS | -A] [-l SELECTOR] [--field-selector F]
//	              [-o FORMAT] [--no-headers] [--sort-by PATH] [--show-labels]
//	              [-L KEY,...] [--show-kind] [--show-managed-fields]
//	    Objects as kubectl get lists them, with kubectl's table columns for
//	    pods, deployments, replicasets, statefulsets, daemonsets, services,
//	    endpoints, endpointslices, nodes, namespaces, configmaps, secrets,
//	    jobs, persistentvolumes, persistentvolumeclaims and events (wide adds
//	    kubectl's wide columns), custom resources with their CRD's
//	    additionalPrinterColumns when the file holds the CRD, others as NAME
//	    AGE; a NAMESPACE column with -A; several types (pods,cm) one table
//	    after the other, names prefixed with their kind. FORMAT is table,
//	    wide, json, yaml (a List), name, jsonpath=TEMPLATE,
//	    custom-columns=HEADER:PATH,... or go-template=TEMPLATE.
//	    Without -n or -A: the namespace the resource was recorded for, else
//	    "default"; -A wins over -n, and -n picks the scope recorded for that
//	    namespace among several. Field selectors: metadata.name,
//	    metadata.namespace, and for pods spec.nodeName, spec.restartPolicy,
//	    spec.schedulerName, spec.serviceAccountName, status.phase,
//	    status.podIP, status.nominatedNodeName. managedFields are left out
//	    unless --show-managed-fields.
//
//	snapshot get FILE TYPE[,TYPE...] NAME... | TYPE/NAME... [-n NS] [-o FORMAT]
//	             [--ignore-not-found] [--no-headers] [--show-labels] [-L KEY,...]
//	    Objects by name, as kubectl get prints them: a table by default,
//	    -o yaml, json or another FORMAT for the objects themselves (one
//	    object as itself, several as a List). TYPE/NAME arguments are what
//	    list -o name prints. Names not found are reported after the objects
//	    found as kubectl reports them (Error from cache file (NotFound):
//	    pods "x" not found), exit code 3 (see Exit codes), or 0 with
//	    --ignore-not-found.
//
//	snapshot index FILE RESOURCE INDEX [VALUE] [--counts]
//	    The values of an index and the keys filed under each, only keys
//	    whose object the file holds: an entry naming a key without an
//	    object is named on standard error after the others (exit code 5).
//
//	snapshot verify FILE
//	    The bbolt structure, each resource's metadata, every item (it
//	    decodes, its resourceVersion matches) and every index entry against
//	    its item and back. Prints each problem; exit code 6 if any. Objects
//	    sealed with a key --key-file lacks are not problems of the file:
//	    exit code 8 if nothing else is wrong.
//
//	snapshot export FILE RESOURCE [-n NS] [-l SELECTOR] [-o yaml|json] [--raw] [--no-status]
//	    A List for kubectl apply -f or test fixtures. Unless --raw, the
//	    fields the API server sets are removed: resourceVersion (a stale one
//	    makes apply fail with a conflict), uid, creationTimestamp,
//	    generation, selfLink, managedFields, deletion fields, ownerReferences
//	    (owners are named by uid; elsewhere the garbage collector would
//	    delete the objects), the last-applied-configuration annotation, and
//	    the allocated clusterIP(s) of Services. status is kept unless
//	    --no-status.
//
//	snapshot diff FILE1 FILE2 [RESOURCE] [--show] [-U N] [--exit-code]
//	    Keys added (+), removed (-) and changed (~, another resourceVersion);
//	    --show adds a unified diff of the YAML of each changed object.
//
//	snapshot compact FILE --output OUT [--force]
//	    A compacted copy (bbolt.Compact), written beside OUT, flushed,
//	    checked, then moved to OUT. Refuses an existing OUT without --force,
//	    and OUT = FILE always.
//
//	snapshot backup URL --output OUT [--force] [--request-timeout D] [--stall-timeout D]
//	        [--token-file F | --token T] [--kubeconfig F] [--context C]
//	        [--certificate-authority F] [--unsafe-token-over-http]
//	    A consistent hot backup from a process serving bolt.DB.BackupHandler:
//	    streamed to a temporary file, flushed, checked, then moved to OUT.
//	    The request carries a bearer token for the endpoint's authorizer:
//	    --token-file's, --token's, or the kubeconfig user's (never printed,
//	    never sent over plain HTTP to a host other than loopback).
//
//	snapshot serve FILE [--address 127.0.0.1:0] [--kubeconfig OUT]
//	        [--token-file F | --token T]
//	    A read-only Kubernetes API over FILE, and a kubeconfig for it (on
//	    standard output or in OUT), so that kubectl, client-go programs and
//	    other tools read the snapshot as they read a cluster: discovery of
//	    the groups and resources the file holds, GET and LIST with label and
//	    field selectors, limit and continue, tables with the columns of list
//	    (kubectl get), WATCH that sends the stored state and stays open (the
//	    file does not change); every write is refused (405). A sealed
//	    resource is served only with --key-file (403 without). Loopback by
//	    default; another address needs a token, and is served over TLS with
//	    a certificate made at start that the kubeconfig trusts. Ctrl-C stops
//	    it (exit code 0).
//
// RESOURCE is what kubectl accepts where the file allows it: the plural
// (pods), the singular (pod), a built-in short name (po, deploy, svc...),
// qualified by group (deployments.apps) or version and group
// (deployments.v1.apps), or the ID that info prints (needed only when a file
// holds one resource under several scopes; quote it for the shell, or pick
// the namespace-scoped copy with -n). A custom resource cached by a dynamic
// informer, recorded without a kind, gets it from its CRD in the file or from
// its objects, so widget, Widget and widget.example.com find it. Every
// command takes
// --lock-timeout (default 1s), the wait for the file's lock.
//
// # Sealed resources
//
// A resource a controller seals (Secrets, by default) stores its objects
// encrypted. --key-file FILE gives the keys that decrypt them, the key
// file the controller reads (one base64 key per line). Without it, or
// with one that lacks the key that sealed an object, the commands that
// print objects say which key ID is missing and exit with code 8: the
// file is not damaged. What the file stores in clear shows without a key:
// info (counts, the key IDs that sealed the objects), list -o name and get
// -o name (names, selected by namespace, labels, metadata.name and
// metadata.namespace), index, and diff without --show.
//
// # Exit codes
//
//	  0  success
//	  1  general error (I/O, network, output file exists)
//	  2  usage error (bad command line, selector or output format; FILE is a directory)
//	  3  not found (file, resource, object or index)
//	  4  file locked by a running process: use snapshot backup to read its cache
//	  5  not a readable warmcache file (empty, truncated, garbage, a bbolt file
//	       of another program, left unflushed across a restart of the machine:
//	       see --unsafe-ignore-state), written by a newer warmcache, or damaged:
//	       list, get and export print every object they can read, then the
//	       keys they could not on standard error; index prints the keys whose
//	       object exists, then the others
//	  6  verify found problems
//	  7  diff --exit-code found differences
//	  8  objects of a sealed resource cannot be decrypted: no --key-file, or
//	       it lacks the key that sealed them (the file is not damaged); list
//	       and export print every object they can decrypt, then the keys of
//	       the others on standard error
//	130  interrupted (Ctrl-C)
//
// kubectl exits with 1 for a missing object as for any failure; snapshot
// exits with 3, so that a script can tell an object that is not in the
// file from a file it could not read, and prints kubectl's NotFound line.
//
// # Examples
//
//	snapshot info cache.db
//	snapshot list cache.db pods -n kube-system -o wide
//	snapshot list cache.db deploy -A -l app=web -o yaml
//	snapshot get cache.db pods web-0 -n web
//	snapshot get cache.db pods web-0 -n web -o yaml
//	snapshot list cache.db pods -A -o name | head -3 | xargs snapshot get cache.db -o name
//	snapshot list cache.db pods,cm -n web
//	snapshot list cache.db pods -A -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName --sort-by .spec.nodeName
//	snapshot get cache.db nodes node-1 -o jsonpath='{.status.addresses[*].address}'
//	snapshot index cache.db pods namespace --counts
//	snapshot verify cache.db || echo "inconsistent"
//	snapshot export cache.db configmaps -n web > web.yaml && kubectl apply -f web.yaml
//	snapshot diff yesterday.db today.db pods --show
//	snapshot compact cache.db --output cache.compact.db
//	snapshot backup http://localhost:8080/debug/warmcache/backup --output copy.db
//	snapshot serve cache.db --kubeconfig snap.kubeconfig & kubectl --kubeconfig snap.kubeconfig get pods -A
//
// list, export and verify stream objects from the file a chunk at a time:
// the memory of list and export stays flat whatever the number of objects
// (also with -o custom-columns); verify's grows by 8 bytes per object (the
// envelope ids it cross-checks). --sort-by holds each object's key and sort
// value, not the object, and reads the objects again in sorted order (one
// lookup each, 256 at a time on every core); -o jsonpath and -o go-template
// hold the whole List, which their templates address. json and yaml output
// is rendered on every core, in batches of 64 objects written in order, and
// is kubectl's byte for byte (but for a raw NEL, U+0085, in a string, which
// kubectl's YAML folds into a space and snapshot keeps). The commands that
// stream (list but with -o jsonpath or -o go-template, export, verify) set
// the garbage collector's target to 400% unless GOGC is set: their live
// heap is small, and collecting less often saves CPU.
package main

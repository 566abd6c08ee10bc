// Command snapshot inspects the bbolt files in which warmcache informers keep
// their cache, as kubectl get inspects a cluster.
//
// It never writes the file it inspects: it opens it read-only, and only
// compact and backup write, to the file their --output names. A file a
// running controller holds is locked (exit code 4): fetch a consistent copy
// with snapshot backup and inspect the copy. Data goes to standard output;
// errors, warnings and progress bars (on a terminal) to standard error.
// docs/snapshot.md tells more: what each command holds in memory and costs,
// what export removes, sealed resources.
//
// # Install
//
//	go install github.com/warmcache/warmcache/cmd/snapshot@latest
//	source <(snapshot completion bash)   # or zsh, fish, powershell
//
// # Commands
//
//	snapshot info FILE [-o text|json|yaml]
//	    Per resource: group, version, resource, kind, scope, object count,
//	    resourceVersion, state, schema, codec, indexes, bytes used. Answers
//	    from recorded counts, without reading objects.
//
//	snapshot list FILE TYPE[,TYPE...] [-n NS | -A] [-l SELECTOR] [--field-selector F]
//	              [-o FORMAT] [--no-headers] [--sort-by PATH] [--show-labels]
//	              [-L KEY,...] [--show-kind] [--show-managed-fields]
//	    Objects as kubectl get lists them: kubectl's table columns for the
//	    built-in kinds it knows (wide adds its wide columns), a CRD's
//	    additionalPrinterColumns when the file holds the CRD, else NAME AGE.
//	    FORMAT is table, wide, json, yaml (a List), name,
//	    jsonpath=TEMPLATE, custom-columns=HEADER:PATH,... or
//	    go-template=TEMPLATE. Without -n or -A: the namespace the resource
//	    was recorded for, else "default"; -A wins over -n. Field selectors:
//	    metadata.name, metadata.namespace, and for pods spec.nodeName,
//	    spec.restartPolicy, spec.schedulerName, spec.serviceAccountName,
//	    status.phase, status.podIP, status.nominatedNodeName.
//
//	snapshot get FILE TYPE[,TYPE...] NAME... | TYPE/NAME... [-n NS] [-o FORMAT]
//	             [--ignore-not-found] [--no-headers] [--show-labels] [-L KEY,...]
//	    Objects by name: a table by default, one object as itself or
//	    several as a List with -o json or yaml. TYPE/NAME is what list -o
//	    name prints. A name not found is reported as kubectl reports it,
//	    after the objects found (exit code 3, or 0 with --ignore-not-found).
//
//	snapshot index FILE RESOURCE INDEX [VALUE] [--counts]
//	    The values of an index and the keys filed under each.
//
//	snapshot verify FILE
//	    The bbolt structure, each resource's metadata, every item and every
//	    index entry against its item and back; prints each problem.
//
//	snapshot export FILE RESOURCE [-n NS | -A] [-l SELECTOR] [--field-selector F]
//	                [-o yaml|json] [--raw] [--no-status]
//	    A List for kubectl apply -f or test fixtures, without the fields the
//	    API server sets (resourceVersion, uid, ownerReferences...) unless
//	    --raw; status is kept unless --no-status.
//
//	snapshot diff FILE1 FILE2 [RESOURCE] [--show] [-U N] [--exit-code]
//	    Keys added (+), removed (-) and changed (~); --show adds a unified
//	    diff of the YAML of each changed object.
//
//	snapshot compact FILE --output OUT [--force]
//	    A compacted copy, written beside OUT, checked, then moved to OUT.
//
//	snapshot backup URL --output OUT [--force] [--request-timeout D] [--stall-timeout D]
//	        [--token-file F | --token T] [--kubeconfig F] [--context C]
//	        [--certificate-authority F] [--unsafe-token-over-http]
//	    A consistent hot copy from a process serving bolt.DB.BackupHandler,
//	    with the bearer token of --token-file, --token or the kubeconfig's
//	    user (never sent over plain HTTP but to loopback).
//
//	snapshot serve FILE|URL [--address 127.0.0.1:0] [--kubeconfig OUT]
//	        [--token-file F | --token T] [--refresh D] [--backup-...]
//	    A read-only Kubernetes API over FILE, or over a copy fetched from a
//	    running process's backup URL (the flags of backup, prefixed with
//	    backup-; --refresh fetches a new copy that often), and a kubeconfig
//	    for it: kubectl, k9s and client-go programs read the snapshot as a
//	    cluster. Writes are refused (405); another address than loopback
//	    needs a token and is served over TLS. Ctrl-C stops it.
//
// TYPE and RESOURCE are what kubectl accepts where the file allows it: pods,
// pod, po, deployments.apps, deploy, deployments.v1.apps, or the ID that info
// prints. Every command takes --lock-timeout (default 1s), the wait for the
// file's lock, and --key-file FILE, the controller's key file, without which
// the objects of a sealed resource (Secrets, by default) are not printed:
// info, index, diff without --show, and list and get -o name work without it.
//
// # Exit codes
//
//	  0  success
//	  1  general error (I/O, network, output file exists)
//	  2  usage error (bad command line, selector or output format; FILE is a directory)
//	  3  not found (file, resource, object or index; kubectl exits 1, but
//	       3 tells a missing object from a file that cannot be read)
//	  4  file locked by a running process: use snapshot backup to read its cache
//	  5  not a readable warmcache file (or one left unflushed across a
//	       restart of the machine: see --unsafe-ignore-state), written by a
//	       newer warmcache, or damaged: list, get, export and index print
//	       what they can read, then the keys they could not on standard error
//	  6  verify found problems
//	  7  diff --exit-code found differences
//	  8  objects of a sealed resource cannot be decrypted: no --key-file, or
//	       it lacks the key that sealed them (the file is not damaged)
//	130  interrupted (Ctrl-C)
//
// # Examples
//
//	snapshot info cache.db
//	snapshot list cache.db pods -n kube-system -o wide
//	snapshot list cache.db deploy -A -l app=web -o yaml
//	snapshot list cache.db pods -A -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName --sort-by .spec.nodeName
//	snapshot get cache.db pods web-0 -n web -o yaml
//	snapshot get cache.db nodes node-1 -o jsonpath='{.status.addresses[*].address}'
//	snapshot index cache.db pods namespace --counts
//	snapshot verify cache.db || echo "inconsistent"
//	snapshot export cache.db configmaps -n web > web.yaml && kubectl apply -f web.yaml
//	snapshot diff yesterday.db today.db pods --show
//	snapshot backup http://localhost:8080/debug/warmcache/backup --output copy.db
//	snapshot serve cache.db --kubeconfig snap.kubeconfig & kubectl --kubeconfig snap.kubeconfig get pods -A
package main

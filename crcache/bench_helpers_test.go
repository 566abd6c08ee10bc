package crcache

import (
	"fmt"
	"os"
)

func errNotSynced(name string) error { return fmt.Errorf("%s: the cache did not sync", name) }

func mkdirTemp() (string, error) { return os.MkdirTemp("", "crcache-bench") }

func removeAll(dir string) { _ = os.RemoveAll(dir) }

package memory

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// keyedTxn is a transaction with its key and, for upserts, its index values.
type keyedTxn struct {
	index  int // position in the caller's slice
	key    string
	obj    interface{}
	delete bool
	values [][]string
}

// keyTxn computes the key of txn and checks its type.
func (s *Store) keyTxn(op string, i int, txn cache.Transaction) (keyedTxn, error) {
	switch txn.Type {
	case cache.TransactionTypeAdd, cache.TransactionTypeUpdate, cache.TransactionTypeDelete:
	default:
		return keyedTxn{}, fmt.Errorf("memory: %s: transaction %d: %w %q", op, i, ErrTransactionType, txn.Type)
	}
	key, err := s.key(txn.Object)
	if err != nil {
		return keyedTxn{}, fmt.Errorf("memory: %s: transaction %d: %w", op, i, err)
	}
	return keyedTxn{index: i, key: key, obj: txn.Object, delete: txn.Type == cache.TransactionTypeDelete}, nil
}

// applyLocked applies one prepared transaction to the current content.
// s.mu must be held for writing.
func (s *Store) applyLocked(t keyedTxn) {
	if t.delete {
		s.cur.remove(t.key)
		return
	}
	s.cur.put(t.key, t.obj, t.values)
}

// Transaction applies txns in order under one lock acquisition, as
// client-go's cache.TransactionStore. A transaction whose key cannot be
// computed, whose type is unknown or whose object an index function
// rejects is skipped and reported in the returned error; the others are
// applied and listed in SuccessfulIndices. The resourceVersion of the last
// applied object is recorded (none if it has no metadata, e.g. a
// cache.DeletedFinalStateUnknown). It returns nil when every transaction
// was applied. After Close every transaction fails with store.ErrClosed.
func (s *Store) Transaction(txns ...cache.Transaction) *cache.TransactionError {
	if len(txns) == 0 {
		return nil
	}
	var errs []error
	keyed := make([]keyedTxn, 0, len(txns))
	for i, txn := range txns {
		t, err := s.keyTxn("transaction", i, txn)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keyed = append(keyed, t)
	}
	succeeded := make([]int, 0, len(keyed))
	if !s.transactLocked(keyed, &succeeded, &errs) {
		return &cache.TransactionError{SuccessfulIndices: []int{}, TotalTransactions: len(txns), Errors: []error{errClosed("transaction")}}
	}
	if len(errs) == 0 {
		return nil
	}
	return &cache.TransactionError{SuccessfulIndices: succeeded, TotalTransactions: len(txns), Errors: errs}
}

// transactLocked takes the lock and applies keyed, appending to succeeded
// and errs. It returns false if the store is closed.
func (s *Store) transactLocked(keyed []keyedTxn, succeeded *[]int, errs *[]error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	var last interface{}
	slab := make([][]string, len(keyed)*len(s.indexers))
	for _, t := range keyed {
		if !t.delete {
			var values [][]string
			var err error
			values, slab, err = indexValues(slab, s.indexers, t.key, t.obj)
			if err != nil {
				*errs = append(*errs, fmt.Errorf("memory: transaction %d: %w", t.index, err))
				continue
			}
			t.values = values
		}
		s.applyLocked(t)
		*succeeded = append(*succeeded, t.index)
		last = t.obj
	}
	if rv, ok := rvOf(last); ok {
		s.rv = rv
	}
	return true
}

// Apply applies txns in order and records rv, atomically: readers see all
// of it or none. An empty rv records the resourceVersion of the last object
// (none if it has no metadata); empty txns with a non-empty rv is a
// bookmark. A key error, unknown type or index function error in any
// transaction fails the whole batch with nothing applied. Deleting an
// absent key is not an error.
func (s *Store) Apply(ctx context.Context, txns []cache.Transaction, rv string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: apply: %w", err)
	}
	keyed := make([]keyedTxn, len(txns))
	for i, txn := range txns {
		t, err := s.keyTxn("apply", i, txn)
		if err != nil {
			return err
		}
		keyed[i] = t
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed("apply")
	}
	slab := make([][]string, len(keyed)*len(s.indexers))
	for i := range keyed {
		t := &keyed[i]
		if t.delete {
			continue
		}
		var err error
		if t.values, slab, err = indexValues(slab, s.indexers, t.key, t.obj); err != nil {
			return fmt.Errorf("memory: apply: transaction %d: %w", i, err)
		}
	}
	for _, t := range keyed {
		s.applyLocked(t)
	}
	switch {
	case rv != "":
		s.rv = rv
	case len(txns) > 0:
		if objRV, ok := rvOf(txns[len(txns)-1].Object); ok {
			s.rv = objRV
		}
	}
	return nil
}

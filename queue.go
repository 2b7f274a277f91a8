package informer

import (
	"errors"
	"sync"
)

// RequeueError, returned by the process function of a Pop, puts the popped
// item back at the end of the queue, unless its key was queued again in the
// meantime; Pop then returns Err. Return it as &RequeueError{Err: err}.
type RequeueError struct {
	Err error
}

func (e *RequeueError) Error() string {
	if e.Err == nil {
		return "informer: requeue"
	}
	return "informer: requeue: " + e.Err.Error()
}

func (e *RequeueError) Unwrap() error { return e.Err }

// requeued reports whether err asks for the item to be queued again, and
// the error Pop should return then.
func requeued(err error) (bool, error) {
	var rq *RequeueError
	if errors.As(err, &rq) {
		return true, rq.Err
	}
	return false, err
}

// syncState tracks what FIFO and DeltaFIFO share: whether the initial
// population has been popped, and whether the queue is closed. Its owner
// holds mu around every method.
type syncState struct {
	mu   sync.Mutex
	cond sync.Cond // on mu; broadcast when items are queued or the queue closes

	populated bool // the first Add, Update, Delete, AddIfNotPresent or Replace happened
	initial   int  // queue entries of the first Replace not popped yet
	synced    bool // populated and initial reached zero; never reset
	closed    bool
}

func (s *syncState) init() { s.cond.L = &s.mu }

// touchLocked records a write other than Replace.
func (s *syncState) touchLocked() {
	s.populated = true
	s.checkLocked()
}

// replacedLocked records a Replace that queued n entries. Only the first
// write decides the initial population.
func (s *syncState) replacedLocked(n int) {
	if !s.populated {
		s.populated = true
		s.initial = n
	}
	s.checkLocked()
}

// poppedLocked records that one queue entry was taken and reports whether
// the sync state may have changed.
func (s *syncState) poppedLocked() bool {
	if s.initial > 0 {
		s.initial--
		return true
	}
	return false
}

func (s *syncState) checkLocked() {
	if s.populated && s.initial == 0 {
		s.synced = true
	}
}

// HasSynced reports whether the items of the first Replace have all been
// popped, or a write other than Replace came first.
func (s *syncState) HasSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

// Close makes Pop return ErrClosed once the queue is empty. Items queued
// before or after Close are still handed out by Pop.
func (s *syncState) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.cond.Broadcast()
}

// IsClosed reports whether Close was called.
func (s *syncState) IsClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

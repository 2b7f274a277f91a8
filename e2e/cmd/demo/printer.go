package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// printer writes progress lines, each with the time since the demo started. It is safe for
// concurrent use: the controller's workers print through it too.
type printer struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
}

func newPrinter(out io.Writer) *printer { return &printer{out: out, start: time.Now()} }

// say prints one line.
func (p *printer) say(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "[%6.2fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

// raw prints text as it is.
func (p *printer) raw(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.out, text)
}

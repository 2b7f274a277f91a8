package gunzip

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reference inflates data with compress/gzip, as a multistream reader,
// and returns what it read and its error (nil at a clean end).
func reference(data []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err == io.EOF {
		return nil, nil // no member at all: compress/gzip's NewReader says io.EOF
	}
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(r, maxOutput+1))
}

// maxOutput bounds what the tests read of a stream: deflate expands a
// kilobyte to a megabyte, and the fuzzer finds such inputs. Past it, the
// two outputs are compared as far as they go.
const maxOutput = 8 << 20

// chunks is an io.Reader that hands data out in pieces of the sizes its
// source picks, as a network connection does.
type chunks struct {
	data []byte
	rnd  *rand.Rand
	max  int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rnd.IntN(c.max))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// ours inflates data with a Reader fed in pieces of at most max bytes,
// read through a buffer of size buf.
//
// The Reader's own input buffer is of the default size, or, as seed picks,
// of 16, 40 or 1,000 bytes, so that what it keeps of its input when it
// reads more (a block header it may read again, the bytes its bit buffer
// may give back) is moved often.
func ours(data []byte, seed uint64, max, buf int) ([]byte, error) {
	src := &chunks{data: data, rnd: rand.New(rand.NewPCG(seed, 1)), max: max}
	z := newReaderSize(src, [...]int{inSize, 16, 40, 1000}[seed%4])
	var out []byte
	p := make([]byte, buf)
	for {
		n, err := z.Read(p)
		out = append(out, p[:n]...)
		if err == io.EOF || len(out) > maxOutput {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// check holds ours to compress/gzip on data: the same output for a stream
// it accepts, an error for one it refuses, after the same output as far
// as both went.
func check(t *testing.T, data []byte, seed uint64, max, buf int) {
	t.Helper()
	want, wantErr := reference(data)
	got, err := ours(data, seed, max, buf)
	if len(want) > maxOutput || len(got) > maxOutput {
		// Both must go as far, with the same bytes.
		if len(want) <= maxOutput || len(got) <= maxOutput {
			t.Fatalf("past %d bytes of output: compress/gzip read %d (%v), ours %d (%v)", maxOutput, len(want), wantErr, len(got), err)
		}
		if n := min(len(got), len(want)); !bytes.Equal(got[:n], want[:n]) {
			t.Fatalf("the first %d bytes differ from compress/gzip's", n)
		}
		return
	}
	if wantErr == nil {
		if err != nil {
			t.Fatalf("compress/gzip reads %d bytes, ours fails after %d: %v", len(want), len(got), err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("output differs from compress/gzip's (%d against %d bytes): %s", len(got), len(want), cmp.Diff(want, got))
		}
		return
	}
	if err == nil {
		t.Fatalf("compress/gzip fails (%v after %d bytes), ours reads %d bytes with no error", wantErr, len(want), len(got))
	}
	n := min(len(got), len(want))
	if !bytes.Equal(got[:n], want[:n]) {
		t.Fatalf("before their errors (%v; %v), the outputs differ", wantErr, err)
	}
}

// gz compresses each of parts as a member of its own at level.
func gz(t testing.TB, level int, parts ...[]byte) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		w, err := gzip.NewWriterLevel(&b, level)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(p)
		w.Close()
	}
	return b.Bytes()
}

// texts are inputs of several shapes: repetitive, random, long runs, a
// protobuf-like mix.
func texts() [][]byte {
	rnd := rand.New(rand.NewPCG(7, 7))
	random := make([]byte, 70<<10)
	for i := range random {
		random[i] = byte(rnd.Uint32())
	}
	var mixed bytes.Buffer
	for i := range 3000 {
		mixed.WriteString(`{"metadata":{"name":"pod-`)
		mixed.WriteByte(byte('a' + i%26))
		mixed.WriteString(`","labels":{"app":"web"}},"spec":{"containers":[{"image":"registry.k8s.io/pause:3.10"}]}}`)
		mixed.Write(random[i : i+i%7])
	}
	return [][]byte{
		nil,
		[]byte("a"),
		[]byte("hello, hello, hello, hello"),
		bytes.Repeat([]byte{0}, 100<<10),
		bytes.Repeat([]byte("ab"), 40<<10),
		random,
		mixed.Bytes(),
	}
}

// TestReaderMatchesGzip inflates streams compress/gzip wrote, at every
// level, one member and several, fed whole and a byte at a time, and
// compares with compress/gzip's reading.
func TestReaderMatchesGzip(t *testing.T) {
	levels := []int{gzip.NoCompression, gzip.BestSpeed, gzip.DefaultCompression, gzip.BestCompression, gzip.HuffmanOnly}
	for _, text := range texts() {
		for _, level := range levels {
			one := gz(t, level, text)
			several := gz(t, level, text, []byte("between"), text[:len(text)/3], nil)
			for _, data := range [][]byte{one, several} {
				check(t, data, 1, 1<<20, 64<<10)
				check(t, data, 2, 1, 100)
				check(t, data, 3, 300, 7)
				want, _ := reference(data)
				got, err := ours(data, 4, 4096, 32<<10)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("level %d, %d bytes: %v", level, len(text), err)
				}
			}
		}
	}
}

// TestReaderFlushes: a member with flushes inside (a sync flush ends with
// an empty stored block), as a stream that compresses event by event in
// one member writes.
func TestReaderFlushes(t *testing.T) {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	for _, text := range texts() {
		w.Write(text)
		w.Flush()
	}
	w.Close()
	check(t, b.Bytes(), 1, 1<<20, 64<<10)
	check(t, b.Bytes(), 2, 13, 1000)
}

// header writes a member's header with the given flags' fields.
func header(flags byte, extra []byte, name, comment string) []byte {
	h := []byte{0x1f, 0x8b, 8, flags, 1, 2, 3, 4, 0, 3}
	if flags&flagExtra != 0 {
		h = binary.LittleEndian.AppendUint16(h, uint16(len(extra)))
		h = append(h, extra...)
	}
	if flags&flagName != 0 {
		h = append(append(h, name...), 0)
	}
	if flags&flagComment != 0 {
		h = append(append(h, comment...), 0)
	}
	if flags&flagHeaderCRC != 0 {
		h = binary.LittleEndian.AppendUint16(h, uint16(crc32.ChecksumIEEE(h)))
	}
	return h
}

// member is a member with the given header around text deflated.
func member(t testing.TB, h, text []byte) []byte {
	var b bytes.Buffer
	b.Write(h)
	w, _ := flate.NewWriter(&b, flate.DefaultCompression)
	w.Write(text)
	w.Close()
	b.Write(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(text)), uint32(len(text))))
	return b.Bytes()
}

// TestReaderHeaders: every optional field of a header, long ones, a bad
// header checksum, and what is not a header.
func TestReaderHeaders(t *testing.T) {
	text := []byte("the text of the member, the text")
	long := string(bytes.Repeat([]byte("n"), 600))
	cases := map[string][]byte{
		"extra":            member(t, header(flagExtra, []byte("xx"), "", ""), text),
		"extra 60 KiB":     member(t, header(flagExtra, bytes.Repeat([]byte("e"), 60<<10), "", ""), text),
		"name":             member(t, header(flagName, nil, "pods.pb", ""), text),
		"name too long":    member(t, header(flagName, nil, long, ""), text),
		"comment":          member(t, header(flagComment, nil, "", "a comment"), text),
		"latin-1 name":     member(t, header(flagName, nil, "caf\xe9", ""), text),
		"header crc":       member(t, header(flagHeaderCRC|flagName|flagExtra, []byte("e"), "n", ""), text),
		"all":              member(t, header(flagHeaderCRC|flagName|flagExtra|flagComment|1<<5, []byte("e"), "n", "c"), text),
		"not gzip":         []byte("plain text, not a gzip stream"),
		"method 7":         append([]byte{0x1f, 0x8b, 7}, member(t, header(0, nil, "", ""), text)[3:]...),
		"trailing":         append(member(t, header(0, nil, "", ""), text), 0x1f),
		"trailing 10":      append(member(t, header(0, nil, "", ""), text), "0123456789"...),
		"short header":     []byte{0x1f, 0x8b, 8, 0},
		"bad header crc":   func() []byte { m := member(t, header(flagHeaderCRC, nil, "", ""), text); m[10]++; return m }(),
		"bad crc":          func() []byte { m := member(t, header(0, nil, "", ""), text); m[len(m)-6]++; return m }(),
		"bad size":         func() []byte { m := member(t, header(0, nil, "", ""), text); m[len(m)-2]++; return m }(),
		"truncated":        member(t, header(0, nil, "", ""), text)[:20],
		"no trailer":       func() []byte { m := member(t, header(0, nil, "", ""), text); return m[:len(m)-8] }(),
		"half the trailer": func() []byte { m := member(t, header(0, nil, "", ""), text); return m[:len(m)-3] }(),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			check(t, data, 1, 1<<20, 64<<10)
			check(t, data, 2, 1, 5)
		})
	}
}

// TestReaderErrors: the errors are the package's, wrapped, and
// io.ErrUnexpectedEOF for input that ends inside a member.
func TestReaderErrors(t *testing.T) {
	good := gz(t, gzip.DefaultCompression, []byte("some text, some text, some text"))
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"header", []byte("0123456789abc"), ErrHeader},
		{"checksum", func() []byte { b := bytes.Clone(good); b[len(b)-8]++; return b }(), ErrChecksum},
		{"corrupt", append(header(0, nil, "", ""), 0xff, 0xff, 0xff, 0xff), ErrCorrupt},
		{"truncated", good[:len(good)-1], io.ErrUnexpectedEOF},
	} {
		_, err := ours(c.data, 1, 1<<20, 1<<10)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := ours(nil, 1, 1, 1); err != nil {
		t.Errorf("no input: %v, want a clean end", err)
	}
	if _, err := NewReader(nothing{}).Read(make([]byte, 10)); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("a reader that returns nothing: %v, want io.ErrNoProgress", err)
	}
}

// nothing is an io.Reader that returns nothing, and no error.
type nothing struct{}

func (nothing) Read([]byte) (int, error) { return 0, nil }

// queue is an io.Reader of the pieces put in it that fails the test when
// read with none left: the Reader asked for input it did not need.
type queue struct {
	t      *testing.T
	pieces [][]byte
}

func (q *queue) Read(p []byte) (int, error) {
	if len(q.pieces) == 0 {
		q.t.Fatal("the Reader read past the member whose output it was asked for")
	}
	n := copy(p, q.pieces[0])
	if q.pieces[0] = q.pieces[0][n:]; len(q.pieces[0]) == 0 {
		q.pieces = q.pieces[1:]
	}
	return n, nil
}

// TestReaderDoesNotReadAhead: the output of a member is handed out once the
// member has come, without waiting for input after it, as a watch's event
// must be; so is the output before a flush inside a member.
func TestReaderDoesNotReadAhead(t *testing.T) {
	texts := texts()[1:]
	q := &queue{t: t}
	z := NewReader(q)
	for i, text := range texts {
		q.pieces = append(q.pieces, gz(t, gzip.DefaultCompression, text))
		got := make([]byte, len(text))
		if _, err := io.ReadFull(z, got); err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		if !bytes.Equal(got, text) {
			t.Fatalf("member %d differs", i)
		}
	}
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	for i, text := range texts {
		w.Write(text)
		w.Flush()
		q.pieces = append(q.pieces, bytes.Clone(b.Bytes()))
		b.Reset()
		got := make([]byte, len(text))
		if _, err := io.ReadFull(z, got); err != nil {
			t.Fatalf("flush %d: %v", i, err)
		}
		if !bytes.Equal(got, text) {
			t.Fatalf("flush %d differs", i)
		}
	}
}

// FuzzReader holds the Reader to compress/gzip on any input, fed in pieces
// of sizes the fuzzer picks.
func FuzzReader(f *testing.F) {
	for _, text := range texts() {
		if len(text) > 4<<10 {
			text = text[:4<<10]
		}
		f.Add(gz(f, gzip.DefaultCompression, text, text[:len(text)/2]), uint64(1), uint16(1))
		f.Add(gz(f, gzip.HuffmanOnly, text), uint64(2), uint16(100))
		f.Add(gz(f, gzip.NoCompression, text), uint64(3), uint16(7))
	}
	f.Add(member(f, header(flagHeaderCRC|flagName|flagExtra|flagComment, []byte("e"), "n", "c"), []byte("text text text")), uint64(4), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, max uint16) {
		check(t, data, seed, int(max%4096)+1, int(seed%5000)+1)
	})
}

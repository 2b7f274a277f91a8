// Package gunzip inflates a stream of gzip members (RFC 1952 around RFC
// 1951's deflate), as compress/gzip's Reader does, in less CPU: it reads
// its input into a buffer of its own and decodes from there, with a 64-bit
// bit buffer refilled a word at a time and one table lookup for most
// codes, where compress/flate reads its input a byte at a time through an
// io.ByteReader. The apiserver compresses a watch-list stream one event at
// a time, a gzip member each, and inflating them was the largest part of
// what a client paid for a realistic Pod's event on that stream.
//
// It accepts the streams compress/gzip accepts and refuses those it
// refuses (FuzzReader holds the two to the same output and to an error for
// the same inputs). It never reads more input than it needs to return the
// output it has: an event's bytes are handed out as soon as their member,
// or a flush inside it, has come.
package gunzip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
)

// The errors a Reader returns for bad input, wrapped with where it was.
var (
	// ErrHeader is a gzip member header that is not one.
	ErrHeader = errors.New("gunzip: invalid gzip header")
	// ErrChecksum is a member whose trailer does not match its data.
	ErrChecksum = errors.New("gunzip: invalid checksum")
	// ErrCorrupt is deflate data that cannot be decoded.
	ErrCorrupt = errors.New("gunzip: corrupt deflate data")
)

const (
	window = 32 << 10 // deflate's history
	// outSize is the output buffer's: the window and at least window more
	// to decode into before it slides.
	outSize = 4 * window
	// inSize is the input buffer's; it grows, up to maxIn, only for a
	// gzip header longer than it (an extra field of up to 64 KiB).
	inSize = 16 << 10
	maxIn  = 96 << 10
	// maxMatch is the longest output one symbol makes.
	maxMatch = 258
	// maxEmptyReads is how many reads in a row may return nothing and no
	// error.
	maxEmptyReads = 100
)

// state is where the decoder is between two steps.
type state uint8

const (
	stHeader  state = iota // a member's header is next
	stBlock                // a block's header is next
	stStored               // inside a stored block
	stHuffman              // inside a block of Huffman codes
	stTrailer              // the member's trailer is next
)

// InflateResponse makes resp's body, if the server gzipped it, inflate as
// it is read, and marks resp as Go's transport marks a response to the
// gzip it asked for itself: no Content-Encoding or Content-Length,
// ContentLength -1, Uncompressed. It reports whether it did.
func InflateResponse(resp *http.Response) bool {
	if !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return false
	}
	resp.Body = &body{Reader: NewReader(resp.Body), closer: resp.Body}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength, resp.Uncompressed = -1, true
	return true
}

// body is a response body inflated as it is read.
type body struct {
	*Reader
	closer io.Closer
}

func (b *body) Close() error { return b.closer.Close() }

// Reader inflates the gzip members read from an io.Reader, one after the
// other. It is not safe for concurrent use.
type Reader struct {
	r    io.Reader
	rerr error // the error r returned, once it has; io.EOF at its end
	err  error // the error Read returns once the output before it is read

	in       []byte // input; in[ip:iend] not yet taken
	ip, iend int
	base     int64 // input bytes dropped from in's front, for offsets
	empty    int   // reads in a row that returned nothing

	bits uint64 // input bits taken but not used, the next at bit 0
	nb   uint   // how many (the bits above them are zero or the next input's)

	out    []byte // output; out[rp:op] not yet returned
	rp, op int
	// start is where the member's output began in out (less than 0 once
	// the window slid past it): a distance reaches no further back.
	start int

	st     state
	final  bool // the block being decoded is its member's last
	stored int  // bytes of the stored block left
	lit    *table
	dist   *table
	dynLit table
	dynDis table
	clen   table
	lens   [286 + 30]uint8

	crc     uint32 // of the member's output up to crcFrom
	size    uint32 // its length, modulo 2^32
	crcFrom int
}

// NewReader returns a Reader of the gzip members r holds. Unlike
// gzip.NewReader it reads nothing before the first Read.
func NewReader(r io.Reader) *Reader { return newReaderSize(r, inSize) }

// newReaderSize returns a Reader whose input buffer starts at n bytes
// (at least 16): tests make it small, so that its input is moved and
// read again often.
func newReaderSize(r io.Reader, n int) *Reader {
	return &Reader{r: r, in: make([]byte, max(n, 16)), out: make([]byte, outSize)}
}

// Read reads inflated bytes. It returns io.EOF after the last member, an
// error wrapping ErrHeader, ErrChecksum or ErrCorrupt on bad input,
// io.ErrUnexpectedEOF on input that ends inside a member, and the error
// the underlying reader returned otherwise.
func (z *Reader) Read(p []byte) (int, error) {
	for z.rp == z.op {
		if z.err != nil {
			return 0, z.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		z.decode()
	}
	n := copy(p, z.out[z.rp:z.op])
	z.rp += n
	return n, nil
}

// decode decodes until it has output, the output buffer is full, or it
// fails. It waits for input only while it has no output to return.
func (z *Reader) decode() {
	if z.op > len(z.out)-window-maxMatch {
		z.slide()
	}
	from := z.op
	for z.err == nil {
		if !z.step() {
			break // the output buffer is full
		}
		// step needs more input.
		if z.op > from {
			break // return what there is first
		}
		if z.rerr != nil {
			z.ended()
			break
		}
		z.fill()
	}
	z.sum()
}

// ended sets err for input that ended where step needed more.
func (z *Reader) ended() {
	switch {
	case z.rerr != io.EOF:
		z.err = z.rerr
	case z.st == stHeader && z.ip == z.iend:
		z.err = io.EOF
	default:
		z.err = io.ErrUnexpectedEOF
	}
}

// slide moves the window, the last window bytes of output, to out's
// front.
func (z *Reader) slide() {
	z.sum()
	d := z.op - window
	copy(z.out, z.out[d:z.op])
	z.op -= d
	z.rp -= d
	z.start -= d
	z.crcFrom -= d
}

// sum adds the output since the last sum to the member's checksum and
// size.
func (z *Reader) sum() {
	if z.crcFrom < z.op {
		z.crc = crc32.Update(z.crc, crc32.IEEETable, z.out[z.crcFrom:z.op])
		z.size += uint32(z.op - z.crcFrom)
		z.crcFrom = z.op
	}
}

// fill reads more input, keeping what is not taken and the 8 bytes before
// it (those the bit buffer may give back). A header that needed more
// input has taken nothing (see block): it is read again from its start.
func (z *Reader) fill() {
	k := max(z.ip-8, 0)
	if k > 0 && (z.iend == len(z.in) || k >= len(z.in)/2) {
		copy(z.in, z.in[k:z.iend])
		z.ip -= k
		z.iend -= k
		z.base += int64(k)
	}
	if z.iend == len(z.in) {
		if len(z.in) >= maxIn {
			z.err = fmt.Errorf("%w: longer than %d bytes", ErrHeader, maxIn)
			return
		}
		z.in = append(z.in, make([]byte, len(z.in))...)
	}
	n, err := z.r.Read(z.in[z.iend:])
	z.iend += n
	switch {
	case err != nil:
		z.rerr = err
	case n > 0:
		z.empty = 0
	default:
		if z.empty++; z.empty >= maxEmptyReads {
			z.rerr = io.ErrNoProgress // as bufio says of a reader that returns nothing
		}
	}
}

// corrupt sets err for deflate data that cannot be decoded, at the input
// byte at i.
func (z *Reader) corrupt(i int) {
	z.err = fmt.Errorf("%w at input byte %d", ErrCorrupt, z.base+int64(i))
}

// giveBack returns the whole bytes of the bit buffer to the input and
// empties it, at a byte boundary of the input (a stored block's length,
// a member's trailer).
func (z *Reader) giveBack() {
	z.ip -= int(z.nb >> 3)
	z.bits, z.nb = 0, 0
}

// step decodes until the output buffer is full (it returns false) or it
// needs more input than there is (true), or until it fails (z.err set).
func (z *Reader) step() bool {
	for z.err == nil {
		switch z.st {
		case stHeader:
			if !z.header() {
				return true
			}
		case stBlock:
			if !z.block() {
				return true
			}
		case stStored:
			n := min(z.stored, z.iend-z.ip, len(z.out)-z.op)
			copy(z.out[z.op:], z.in[z.ip:z.ip+n])
			z.op += n
			z.ip += n
			z.stored -= n
			if z.stored > 0 {
				return z.op < len(z.out) // out of input, or of room
			}
			z.endBlock()
		case stHuffman:
			switch z.huffman() {
			case needInput:
				return true
			case needRoom, failed:
				return false
			case blockEnded:
				z.endBlock()
			}
		case stTrailer:
			if z.iend-z.ip < 8 {
				return true
			}
			z.sum()
			crc := binary.LittleEndian.Uint32(z.in[z.ip:])
			size := binary.LittleEndian.Uint32(z.in[z.ip+4:])
			if crc != z.crc || size != z.size {
				z.err = fmt.Errorf("%w: of the member ending at input byte %d", ErrChecksum, z.base+int64(z.ip+8))
				return false
			}
			z.ip += 8
			z.st = stHeader
		}
	}
	return false
}

// endBlock goes on after a block: to the next, or to the trailer after
// the member's last.
func (z *Reader) endBlock() {
	if !z.final {
		z.st = stBlock
		return
	}
	z.giveBack()
	z.st = stTrailer
}

const (
	flagHeaderCRC = 1 << 1
	flagExtra     = 1 << 2
	flagName      = 1 << 3
	flagComment   = 1 << 4
	maxString     = 512 // compress/gzip's bound on a name or comment
)

// header reads a member's header, and reports false if the input does
// not hold all of it yet.
func (z *Reader) header() bool {
	b := z.in[z.ip:z.iend]
	if len(b) < 10 {
		return false
	}
	if b[0] != 0x1f || b[1] != 0x8b || b[2] != 8 {
		z.err = fmt.Errorf("%w at input byte %d", ErrHeader, z.base+int64(z.ip))
		return false
	}
	flags, i := b[3], 10
	if flags&flagExtra != 0 {
		if len(b) < i+2 {
			return false
		}
		i += 2 + int(binary.LittleEndian.Uint16(b[i:]))
		if len(b) < i {
			return false
		}
	}
	for _, f := range [...]byte{flagName, flagComment} {
		if flags&f == 0 {
			continue
		}
		n := 0
		for ; ; n++ {
			if n >= maxString {
				z.err = fmt.Errorf("%w: a name or comment longer than %d bytes", ErrHeader, maxString)
				return false
			}
			if i+n >= len(b) {
				return false
			}
			if b[i+n] == 0 {
				break
			}
		}
		i += n + 1
	}
	if flags&flagHeaderCRC != 0 {
		if len(b) < i+2 {
			return false
		}
		if uint16(crc32.ChecksumIEEE(b[:i])) != binary.LittleEndian.Uint16(b[i:]) {
			z.err = fmt.Errorf("%w: header checksum at input byte %d", ErrHeader, z.base+int64(z.ip))
			return false
		}
		i += 2
	}
	z.ip += i
	z.st = stBlock
	z.start, z.crcFrom, z.crc, z.size = z.op, z.op, 0, 0
	return true
}

// block reads a block's header, and reports false if the input does not
// hold all of it yet: nothing is then taken, and it is read again from its
// start with more.
func (z *Reader) block() bool {
	ip, bits, nb := z.ip, z.bits, z.nb
	ok := z.blockHeader()
	if !ok && z.err == nil {
		z.ip, z.bits, z.nb = ip, bits, nb
	}
	return ok
}

// need makes the bit buffer hold n bits (at most 57) if the input has
// them, and reports whether it does.
func (z *Reader) need(n uint) bool {
	for z.nb < n {
		if z.ip == z.iend {
			return false
		}
		z.bits |= uint64(z.in[z.ip]) << z.nb
		z.ip++
		z.nb += 8
	}
	return true
}

// peek looks the next code of t up in the bit buffer, filled first as
// far as the input allows, and returns its entry and the bits it takes;
// ok is false if the buffer holds fewer bits than that, and more input
// is needed. An invalid entry with ok true is a code t does not have.
func (z *Reader) peek(t *table) (e uint32, n uint, ok bool) {
	z.need(57)
	e = t.t[z.bits&t.mask]
	n = uint(e & 31)
	if e&entryLink != 0 {
		e = t.t[uint(e>>16)+uint(z.bits>>n&(1<<(e>>5&15)-1))]
		n += uint(e & 31)
	}
	return e, n, n <= z.nb
}

// take returns the next n bits, which the bit buffer holds.
func (z *Reader) take(n uint) uint32 {
	v := uint32(z.bits & (1<<n - 1))
	z.bits >>= n
	z.nb -= n
	return v
}

// order is the order of the code lengths' code lengths in a dynamic
// block's header.
var order = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// blockHeader is block's reading, which may stop for input anywhere.
func (z *Reader) blockHeader() bool {
	if !z.need(3) {
		return false
	}
	z.final = z.take(1) == 1
	switch z.take(2) {
	case 0:
		z.bits >>= z.nb & 7 // to a byte boundary
		z.nb &^= 7
		z.giveBack()
		if z.iend-z.ip < 4 {
			return false
		}
		n := binary.LittleEndian.Uint16(z.in[z.ip:])
		if ^n != binary.LittleEndian.Uint16(z.in[z.ip+2:]) {
			z.corrupt(z.ip)
			return false
		}
		z.ip += 4
		z.stored, z.st = int(n), stStored
		if n == 0 {
			z.endBlock()
		}
		return true
	case 1:
		z.lit, z.dist, z.st = &fixedLit, &fixedDist, stHuffman
		return true
	case 2:
		return z.dynamic()
	}
	z.corrupt(z.ip)
	return false
}

// dynamic reads the codes of a dynamic block.
func (z *Reader) dynamic() bool {
	if !z.need(14) {
		return false
	}
	nlit := int(z.take(5)) + 257
	ndist := int(z.take(5)) + 1
	nclen := int(z.take(4)) + 4
	if nlit > 286 || ndist > 30 {
		z.corrupt(z.ip)
		return false
	}
	var clens [19]uint8
	for i := range nclen {
		if !z.need(3) {
			return false
		}
		clens[order[i]] = uint8(z.take(3))
	}
	if !z.clen.build(clens[:], clenPrimary, clenInfo[:]) {
		z.corrupt(z.ip)
		return false
	}
	lens := z.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		e, n, ok := z.peek(&z.clen)
		if !ok {
			return false
		}
		if e&entryInvalid != 0 {
			z.corrupt(z.ip)
			return false
		}
		sym := e >> 16
		if sym < 16 {
			z.take(n)
			lens[i] = uint8(sym)
			i++
			continue
		}
		extra, base, prev := uint(2), 3, uint8(0)
		switch sym {
		case 16:
			if i == 0 {
				z.corrupt(z.ip)
				return false
			}
			prev = lens[i-1]
		case 17:
			extra = 3
		default:
			extra, base = 7, 11
		}
		if n+extra > z.nb {
			return false
		}
		z.take(n)
		rep := base + int(z.take(extra))
		if i+rep > len(lens) {
			z.corrupt(z.ip)
			return false
		}
		for range rep {
			lens[i] = prev
			i++
		}
	}
	if !z.dynLit.build(lens[:nlit], litPrimary, litInfo[:]) || !z.dynDis.build(lens[nlit:], distPrimary, distInfo[:]) {
		z.corrupt(z.ip)
		return false
	}
	z.lit, z.dist, z.st = &z.dynLit, &z.dynDis, stHuffman
	return true
}

package gunzip

import "encoding/binary"

// result is why huffman stopped.
type result uint8

const (
	blockEnded result = iota // at the block's end code
	needInput                // the input ends inside the next code
	needRoom                 // the output buffer is full
	failed                   // the data is corrupt: z.err is set
)

// huffman decodes the codes of a block with z.lit and z.dist. While 8
// bytes of input are left it refills the bit buffer a word at a time, to
// 56 bits or more, which is as much as a length and its distance take
// (15 + 5 + 15 + 13 bits); nearer the input's end it refills a byte at a
// time and checks, before it takes a code, that the buffer holds all of
// it, so that it stops between two codes when the input runs out.
func (z *Reader) huffman() result {
	in, out := z.in[:z.iend], z.out
	ip, op, start := z.ip, z.op, z.start
	bits, nb := z.bits, z.nb
	lt, lmask := z.lit.t, z.lit.mask
	dt, dmask := z.dist.t, z.dist.mask
	res := needRoom
	for op <= len(out)-maxMatch {
		if len(in)-ip >= 8 {
			bits |= binary.LittleEndian.Uint64(in[ip:]) << nb
			ip += int(63-nb) >> 3
			nb |= 56
		} else {
			for nb <= 56 && ip < len(in) {
				bits |= uint64(in[ip]) << nb
				ip++
				nb += 8
			}
		}
		e := lt[bits&lmask]
		n := uint(e & 31)
		if e&entryLink != 0 {
			e = lt[uint(e>>16)+uint(bits>>n&(1<<(e>>5&15)-1))]
			n += uint(e & 31)
		}
		if n > nb {
			res = needInput
			break
		}
		if e&entryLiteral != 0 {
			bits >>= n
			nb -= n
			out[op] = byte(e >> 16)
			op++
			// A second literal, if the next code is one: the buffer
			// still holds the 15 bits it may take.
			if nb >= maxCodeLen {
				e = lt[bits&lmask]
				if e&entryLiteral != 0 {
					n = uint(e & 31)
					bits >>= n
					nb -= n
					out[op] = byte(e >> 16)
					op++
				}
			}
			continue
		}
		if e&(entryEnd|entryInvalid) != 0 {
			if e&entryEnd == 0 {
				z.corrupt(ip)
				res = failed
				break
			}
			bits >>= n
			nb -= n
			res = blockEnded
			break
		}
		// A length, then its distance.
		extra := uint(e >> 5 & 15)
		used := n + extra
		length := int(e>>16) + int(bits>>n&(1<<extra-1))
		rest := bits >> used
		d := dt[rest&dmask]
		dn := uint(d & 31)
		if d&entryLink != 0 {
			d = dt[uint(d>>16)+uint(rest>>dn&(1<<(d>>5&15)-1))]
			dn += uint(d & 31)
		}
		dextra := uint(d >> 5 & 15)
		if used+dn+dextra > nb {
			res = needInput
			break
		}
		if d&entryInvalid != 0 {
			z.corrupt(ip)
			res = failed
			break
		}
		dist := int(d>>16) + int(rest>>dn&(1<<dextra-1))
		bits >>= used + dn + dextra
		nb -= used + dn + dextra
		if dist > op-start {
			z.corrupt(ip)
			res = failed
			break
		}
		src := op - dist
		if dist >= length {
			copy(out[op:op+length], out[src:src+length])
			op += length
			continue
		}
		// The copy overlaps what it makes: the dist bytes repeat.
		for end := op + length; op < end; {
			op += copy(out[op:end], out[src:op])
		}
	}
	z.ip, z.op, z.bits, z.nb = ip, op, bits, nb
	return res
}

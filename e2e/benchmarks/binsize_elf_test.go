package benchmarks

import "debug/elf"

// textBytes returns the bytes of the loaded, read-only sections of the ELF
// binary at path: code, read-only data (type descriptors among them), the
// Go pc tables and the type and interface links.
func textBytes(path string) (int64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for _, s := range f.Sections {
		switch s.Name {
		case ".text", ".rodata", ".gopclntab", ".typelink", ".itablink":
			n += int64(s.Size)
		}
	}
	return n, nil
}

package prometheus

import "testing"

func TestResourceVersionValue(t *testing.T) {
	for _, tc := range []struct {
		rv   string
		want float64
		ok   bool
	}{
		{"", 0, false},
		{"12345", 12345, true},
		{"abc", 0, false},
		{"12a", 0, false},
		{"1234567890123456789", 567890123456789, true},     // its 15 least significant digits
		{"99999999999999999999999", 999999999999999, true}, // beyond uint64
	} {
		got, ok := resourceVersionValue(tc.rv)
		if got != tc.want || ok != tc.ok {
			t.Errorf("resourceVersionValue(%q) = %v, %v; want %v, %v", tc.rv, got, ok, tc.want, tc.ok)
		}
	}
}

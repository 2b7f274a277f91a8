package report

import (
	"math"
	"testing"
)

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    float64
		unit string // tidied
		want string
	}{
		{408976.5e-9, "sec/op", "409µs"},
		{1.5e-9, "sec/op", "1.50ns"},
		{2.06e-3, "sec/op", "2.06ms"},
		{1.2, "sec/op", "1.20s"},
		{896, "B/op", "896B"},
		{185785, "B/op", "181KiB"},
		{61003264, "heap-B", "58.2MiB"},
		{0, "B/op", "0B"},
		{11, "allocs/op", "11"},
		{3012, "allocs/op", "3.01k"},
		{10040, "allocs/op", "10.0k"},
		{0.5, "allocs/op", "0.500"},
		{611901.5, "events/s", "612k"},
		{41845e-9, "p50-sec", "41.8µs"},
		{2901, "B/object", "2.83KiB"},
	}
	for _, tt := range tests {
		if got := formatValue(tt.v, tt.unit); got != tt.want {
			t.Errorf("formatValue(%v, %s) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
}

func TestFormatRatio(t *testing.T) {
	tests := []struct {
		r    float64
		want string
	}{
		{0.60483, "0.605×"},
		{1, "1.00×"},
		{1.0392, "1.04×"},
		{12.34, "12.3×"},
		{123.4, "123×"},
		{0.0015, "0.00150×"},
		{0, "0×"},
		{math.Inf(1), "∞"},
		{math.NaN(), "—"},
	}
	for _, tt := range tests {
		if got := formatRatio(tt.r); got != tt.want {
			t.Errorf("formatRatio(%v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestRatio(t *testing.T) {
	if got := ratio(0, 0); got != 1 {
		t.Errorf("ratio(0, 0) = %v, want 1 (equal)", got)
	}
	if got := ratio(0, 3); !math.IsInf(got, 1) {
		t.Errorf("ratio(0, 3) = %v, want +Inf", got)
	}
	if got := ratio(4, 1); got != 0.25 {
		t.Errorf("ratio(4, 1) = %v", got)
	}
}

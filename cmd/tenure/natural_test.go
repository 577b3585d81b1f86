package main

import (
	"slices"
	"testing"
)

func TestCompareCountingSortsTheWayPeopleCount(t *testing.T) {
	got := []string{"partitions/10", "partitions/2", "partitions/1", "partitions/100", "partitions/02", "a", "partitions/9b", "partitions/9a", "", "b1", "b01", "é1"}
	slices.SortFunc(got, compareCounting)
	want := []string{"", "a", "b1", "b01", "partitions/1", "partitions/2", "partitions/02", "partitions/9a", "partitions/9b", "partitions/10", "partitions/100", "é1"}
	if !slices.Equal(got, want) {
		t.Errorf("sorted:\n%q\nwant\n%q", got, want)
	}
}

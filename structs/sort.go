package structs

import "sort"

func sortStrings(s []string) { sort.Strings(s) }

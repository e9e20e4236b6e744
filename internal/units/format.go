package units

import "strconv"

// FormatSize writes MiB in the shortest exact form ParseMiB reads back: 20g, 1536m, 1t.
func FormatSize(mib int64) string { return string(AppendSize(nil, mib)) }

// AppendSize appends FormatSize(mib) to b.
func AppendSize(b []byte, mib int64) []byte {
	switch {
	case mib > 0 && mib%(1<<20) == 0:
		return append(strconv.AppendInt(b, mib>>20, 10), 't')
	case mib > 0 && mib%(1<<10) == 0:
		return append(strconv.AppendInt(b, mib>>10, 10), 'g')
	}
	return append(strconv.AppendInt(b, mib, 10), 'm')
}

// FormatFlag writes MiB as a flag's default is shown: whole GiB as 20G, else 1536M.
func FormatFlag(mib int64) string {
	if mib%1024 == 0 {
		return strconv.FormatInt(mib/1024, 10) + "G"
	}
	return strconv.FormatInt(mib, 10) + "M"
}

// GiB writes MiB for people: whole GiB when exact, else one decimal, rounded down so
// that a capacity is never overstated: 20 GiB, 1.5 GiB.
func GiB(mib int64) string {
	if mib%1024 == 0 {
		return strconv.FormatInt(mib/1024, 10) + " GiB"
	}
	return strconv.FormatFloat(float64(mib*10/1024)/10, 'f', 1, 64) + " GiB"
}

// GiBAndMiB is GiB, followed by the exact MiB when GiB rounded, so that two sizes never
// read alike when they differ: 1.5 GiB = 1600 MiB.
func GiBAndMiB(mib int64) string {
	if mib%1024 == 0 {
		return GiB(mib)
	}
	return GiB(mib) + " = " + strconv.FormatInt(mib, 10) + " MiB"
}

// BytesGiB writes a measured amount of bytes in GiB with one decimal, rounded to the
// nearest: 19.5 GiB.
func BytesGiB(b float64) string { return gib1(b) + " GiB" }

// ShortGiB is BytesGiB for a table column: 19.5G.
func ShortGiB(b float64) string { return gib1(b) + "G" }

func gib1(b float64) string { return strconv.FormatFloat(b/(1<<30), 'f', 1, 64) }

// Exact writes MiB exactly, in GiB when that is whole: 20 GiB, 1536 MiB.
func Exact(mib int64) string {
	if mib%1024 == 0 {
		return strconv.FormatInt(mib/1024, 10) + " GiB"
	}
	return strconv.FormatInt(mib, 10) + " MiB"
}

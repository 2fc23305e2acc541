package sqlpg

import (
	"fmt"
	"strings"
)

// numberFormat is a to_char template for a number, parsed: PostgreSQL's
// digit positions (9: a digit or a blank, 0: a digit or a zero), the
// decimal point (. or D), group separators (, or G), FM (no padding, no
// trailing zeros in 9 positions), the sign (S at either end, MI, PL, SG,
// PR: <n>), and literal text.
type numberFormat struct {
	items      []numItem
	pre, post  int  // digit positions before and after the point
	zeroFrom   int  // the first pre position padded with 0 (pre: none)
	point      bool // the template has a decimal point
	fm         bool
	sign       byte // 0 (default: '-' before the digits, or a blank), 'S', 'M' (MI), 'P' (PL), 'G' (SG), 'R' (PR)
	signAtEnd  bool // S written after the digits
	fracZeroTo int  // the last post position that is a 0 (trailing zeros kept up to it)
}

type numItem struct {
	kind byte // '9', '0', '.', ',', 's' (sign), 'l' (literal)
	lit  string
}

func parseNumberFormat(f string) (*numberFormat, error) {
	nf := &numberFormat{zeroFrom: -1}
	upper := strings.ToUpper(f)
	afterPoint := false
	digits := 0
	for i := 0; i < len(f); {
		rest := upper[i:]
		switch {
		case strings.HasPrefix(rest, "FM"):
			nf.fm = true
			i += 2
		case f[i] == '9' || f[i] == '0':
			if afterPoint {
				nf.post++
				if f[i] == '0' {
					nf.fracZeroTo = nf.post
				}
			} else {
				if f[i] == '0' && nf.zeroFrom < 0 {
					nf.zeroFrom = nf.pre
				}
				nf.pre++
			}
			nf.items = append(nf.items, numItem{kind: f[i]})
			digits++
			i++
		case f[i] == '.' || rest[0] == 'D':
			if afterPoint {
				return nil, fmt.Errorf("[SQLSTATE 42601] multiple decimal points")
			}
			afterPoint, nf.point = true, true
			nf.items = append(nf.items, numItem{kind: '.'})
			i++
		case f[i] == ',' || rest[0] == 'G':
			nf.items = append(nf.items, numItem{kind: ','})
			i++
		case strings.HasPrefix(rest, "MI"), strings.HasPrefix(rest, "PL"), strings.HasPrefix(rest, "SG"), strings.HasPrefix(rest, "PR"):
			nf.sign = map[string]byte{"MI": 'M', "PL": 'P', "SG": 'G', "PR": 'R'}[rest[:2]]
			if nf.sign != 'R' {
				nf.items = append(nf.items, numItem{kind: 's'})
			}
			i += 2
		case rest[0] == 'S':
			if nf.sign != 0 {
				return nil, fmt.Errorf("[SQLSTATE 42601] cannot use \"S\" twice")
			}
			// A leading S floats to the first digit, as the default
			// sign does; a trailing one stays where it is written.
			nf.sign, nf.signAtEnd = 'S', digits > 0
			if nf.signAtEnd {
				nf.items = append(nf.items, numItem{kind: 's'})
			}
			i++
		case f[i] == '"':
			j := strings.IndexByte(f[i+1:], '"')
			if j < 0 {
				nf.items = append(nf.items, numItem{kind: 'l', lit: f[i+1:]})
				i = len(f)
				break
			}
			nf.items = append(nf.items, numItem{kind: 'l', lit: f[i+1 : i+1+j]})
			i += j + 2
		case strings.HasPrefix(rest, "EEEE"), rest[0] == 'V', rest[0] == 'L', strings.HasPrefix(rest, "RN"), strings.HasPrefix(rest, "TH"), rest[0] == '$':
			return nil, fmt.Errorf("[SQLSTATE 0A000] the number template pattern %q in to_char is not supported on the SQLite back end", f[i:min(i+4, len(f))])
		default:
			nf.items = append(nf.items, numItem{kind: 'l', lit: f[i : i+1]})
			i++
		}
	}
	return nf, nil
}

// toCharNumber is to_char(number, template) as PostgreSQL prints it.
func toCharNumber(x float64, f string) (string, error) {
	nf, err := parseNumberFormat(f)
	if err != nil {
		return "", err
	}
	neg := x < 0
	s := FormatNumeric(x, nf.post)
	s = strings.TrimPrefix(s, "-")
	ip, fp, _ := strings.Cut(s, ".")
	if ip == "0" && nf.post > 0 {
		ip = "" // before a fraction a 9 position prints no leading zero
	}
	if neg && strings.Trim(ip+fp, "0") == "" {
		neg = false
	}
	if nf.fm && ip == "" {
		keep := len(fp)
		for keep > nf.fracZeroTo && fp[keep-1] == '0' {
			keep--
		}
		if keep == 0 {
			ip = "0" // FM prints 0. where nothing would follow the point
		}
	}
	overflow := len(ip) > nf.pre
	// The integer digits, right-aligned in the pre positions.
	pad := nf.pre - len(ip)
	var out strings.Builder
	// The sign written at an S (trailing), MI, PL or SG position.
	signStr := func() string {
		switch {
		case nf.sign == 'S' || nf.sign == 'G':
			if neg {
				return "-"
			}
			return "+"
		case nf.sign == 'M' && neg, nf.sign == 'P' && neg:
			return map[byte]string{'M': "-", 'P': " "}[nf.sign]
		case nf.sign == 'P':
			return "+"
		case nf.fm:
			return ""
		}
		return " "
	}
	// The sign that floats to just before the first digit: the default
	// one (kept beside PL), a leading S's, PR's <.
	floating := nf.sign == 0 || nf.sign == 'P' || nf.sign == 'R' || nf.sign == 'S' && !nf.signAtEnd
	pos := 0         // pre position being written
	fpos := 0        // post position being written
	started := false // a digit (or padding zero) was written
	signDone := !floating
	writeDefaultSign := func() {
		if signDone {
			return
		}
		signDone = true
		switch {
		case nf.sign == 'S' && neg:
			out.WriteByte('-')
		case nf.sign == 'S':
			out.WriteByte('+')
		case nf.sign == 'R' && neg:
			out.WriteByte('<')
		case neg:
			out.WriteByte('-')
		case !nf.fm:
			out.WriteByte(' ')
		}
	}
	var frac strings.Builder
	flushFrac := func() {
		t := frac.String()
		if nf.fm {
			// FM drops the fraction's trailing zeros in 9 positions.
			keep := len(t)
			for keep > nf.fracZeroTo && keep > 0 && t[keep-1] == '0' {
				keep--
			}
			t = t[:keep]
		}
		out.WriteString(t)
		frac.Reset()
	}
	for _, it := range nf.items {
		switch it.kind {
		case '9', '0':
			if pos < nf.pre {
				var c byte
				switch {
				case overflow:
					c = '#'
				case pos >= pad:
					c = ip[pos-pad]
				case it.kind == '0' || nf.zeroFrom >= 0 && pos >= nf.zeroFrom:
					c = '0'
				}
				if c != 0 {
					if !started {
						writeDefaultSign()
					}
					started = true
					out.WriteByte(c)
				} else if !nf.fm {
					out.WriteByte(' ')
				}
				pos++
				continue
			}
			if !started {
				writeDefaultSign()
				started = true
			}
			c := byte('0')
			switch {
			case overflow:
				c = '#'
			case fpos < len(fp):
				c = fp[fpos]
			}
			frac.WriteByte(c)
			fpos++
		case '.':
			if !started {
				writeDefaultSign()
				started = true
			}
			out.WriteByte('.')
		case ',':
			switch {
			case started:
				out.WriteByte(',')
			case !nf.fm:
				out.WriteByte(' ')
			}
		case 's':
			flushFrac()
			out.WriteString(signStr())
		case 'l':
			flushFrac()
			out.WriteString(it.lit)
		}
	}
	if !started {
		writeDefaultSign()
	}
	flushFrac()
	if nf.sign == 'R' {
		if neg {
			out.WriteByte('>')
		} else if !nf.fm {
			out.WriteByte(' ')
		}
	}
	return out.String(), nil
}

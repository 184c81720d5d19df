package config

import (
	"fmt"
	"regexp"
	"strings"
)

// checkSelector validates s against the Kubernetes label selector grammar
// (what kubectl get -l accepts):
//
//	selector    = requirement { "," requirement }
//	requirement = key | "!" key | key ("=" | "==" | "!=") value
//	            | key ("in" | "notin") "(" [ value { "," value } ] ")"
//
// It only validates; the cluster package hands the string to the
// Kubernetes client. The error says what is wrong in words.
func checkSelector(s string) error {
	toks, err := lexSelector(s)
	if err != nil {
		return err
	}
	p := &selParser{toks: toks}
	if len(toks) == 0 {
		return fmt.Errorf("is empty")
	}
	for {
		if err := p.requirement(); err != nil {
			return err
		}
		if p.done() {
			return nil
		}
		if t := p.next(); t.kind != tokComma {
			return fmt.Errorf("expected \",\" between requirements, found %q", t.text)
		}
		if p.done() {
			return fmt.Errorf("ends with \",\"; remove it or add a requirement after it")
		}
	}
}

type tokKind int

const (
	tokWord tokKind = iota
	tokComma
	tokOpen
	tokClose
	tokNot
	tokEq
	tokNeq
)

type selTok struct {
	kind tokKind
	text string
}

func lexSelector(s string) ([]selTok, error) {
	var out []selTok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case c == ',':
			out = append(out, selTok{tokComma, ","})
			i++
		case c == '(':
			out = append(out, selTok{tokOpen, "("})
			i++
		case c == ')':
			out = append(out, selTok{tokClose, ")"})
			i++
		case strings.HasPrefix(s[i:], "!="):
			out = append(out, selTok{tokNeq, "!="})
			i += 2
		case c == '!':
			out = append(out, selTok{tokNot, "!"})
			i++
		case strings.HasPrefix(s[i:], "=="):
			out = append(out, selTok{tokEq, "=="})
			i += 2
		case c == '=':
			out = append(out, selTok{tokEq, "="})
			i++
		case c == '<' || c == '>':
			return nil, fmt.Errorf("%q is not supported on namespace labels; use =, !=, in, notin or exists", string(c))
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t,()!=<>", rune(s[j])) {
				j++
			}
			out = append(out, selTok{tokWord, s[i:j]})
			i = j
		}
	}
	return out, nil
}

type selParser struct {
	toks []selTok
	pos  int
}

func (p *selParser) done() bool { return p.pos >= len(p.toks) }

func (p *selParser) peek() selTok {
	if p.done() {
		return selTok{kind: -1}
	}
	return p.toks[p.pos]
}

func (p *selParser) next() selTok {
	t := p.peek()
	p.pos++
	return t
}

func (p *selParser) requirement() error {
	t := p.next()
	if t.kind == tokNot {
		k := p.next()
		if k.kind != tokWord {
			return fmt.Errorf("expected a label key after \"!\"")
		}
		return checkLabelKey(k.text)
	}
	if t.kind != tokWord {
		if t.kind == -1 {
			return fmt.Errorf("expected a label key at the end")
		}
		return fmt.Errorf("expected a label key, found %q", t.text)
	}
	if err := checkLabelKey(t.text); err != nil {
		return err
	}
	op := p.peek()
	switch {
	case op.kind == tokEq || op.kind == tokNeq:
		p.next()
		v := p.peek()
		if v.kind == tokWord {
			p.next()
			return checkLabelValue(v.text)
		}
		return nil // key= matches an empty value
	case op.kind == tokWord && (op.text == "in" || op.text == "notin"):
		p.next()
		if p.next().kind != tokOpen {
			return fmt.Errorf("expected \"(\" after %q", op.text)
		}
		for {
			v := p.next()
			switch v.kind {
			case tokClose:
				return nil
			case tokWord:
				if err := checkLabelValue(v.text); err != nil {
					return err
				}
				switch sep := p.next(); sep.kind {
				case tokClose:
					return nil
				case tokComma:
				default:
					return fmt.Errorf("expected \",\" or \")\" in the %s list", op.text)
				}
			default:
				return fmt.Errorf("unclosed %q list; write %s %s (a,b)", op.text, t.text, op.text)
			}
		}
	case op.kind == tokWord:
		return fmt.Errorf("expected an operator (=, !=, in, notin) after %q, found %q", t.text, op.text)
	}
	return nil // key alone: the label exists
}

var (
	labelName   = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	dnsSubdom   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	labelValueR = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
)

func checkLabelKey(k string) error {
	name := k
	if prefix, n, ok := strings.Cut(k, "/"); ok {
		if len(prefix) > 253 || !dnsSubdom.MatchString(prefix) {
			return fmt.Errorf("label key %q: the prefix before / must be a DNS subdomain such as example.com", k)
		}
		name = n
	}
	if !labelName.MatchString(name) {
		return fmt.Errorf("label key %q: the name must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", k)
	}
	return nil
}

func checkLabelValue(v string) error {
	if !labelValueR.MatchString(v) {
		return fmt.Errorf("label value %q: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", v)
	}
	return nil
}

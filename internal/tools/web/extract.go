package web

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skipped reports whether elements of a carry no readable content (a switch
// rather than a map, so that the package has no init-time work).
func skipped(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg,
		atom.Nav, atom.Footer, atom.Header, atom.Aside, atom.Form,
		atom.Iframe, atom.Object, atom.Button, atom.Select:
		return true
	}
	return false
}

// extract returns the page title and its readable content, as Markdown or
// plain text: the <main> or <article> element when there is one, else the
// body, without scripts, styles and page chrome (nav, header, footer).
func extract(doc *html.Node, markdown bool) (title, text string) {
	var body, main *html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Title:
				if title == "" {
					title = strings.TrimSpace(textOf(n))
				}
			case atom.Body:
				body = n
			case atom.Main, atom.Article:
				if main == nil {
					main = n
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	root := main
	if root == nil {
		root = body
	}
	if root == nil {
		root = doc
	}
	w := &writer{markdown: markdown}
	w.node(root)
	return title, w.String()
}

// textOf is the concatenated text below n.
func textOf(n *html.Node) string {
	var sb strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			sb.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return sb.String()
}

// writer renders a node tree as blocks of text.
type writer struct {
	markdown bool
	sb       strings.Builder
	pre      int // depth inside <pre>
	list     []bool
}

func (w *writer) String() string {
	lines := strings.Split(w.sb.String(), "\n")
	out := make([]string, 0, len(lines))
	blank := true
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			if !blank {
				out = append(out, "")
			}
			blank = true
			continue
		}
		out = append(out, l)
		blank = false
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func (w *writer) block() { w.sb.WriteString("\n\n") }

func (w *writer) text(s string) {
	if w.pre > 0 {
		w.sb.WriteString(s)
		return
	}
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return
	}
	cur := w.sb.String()
	if len(cur) > 0 && !strings.HasSuffix(cur, "\n") && !strings.HasSuffix(cur, " ") && !strings.HasSuffix(cur, "(") && !strings.HasSuffix(cur, "[") {
		w.sb.WriteByte(' ')
	}
	w.sb.WriteString(s)
}

func (w *writer) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c)
	}
}

func (w *writer) node(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.ElementNode:
	default:
		w.children(n)
		return
	}
	if skipped(n.DataAtom) {
		return
	}
	md := w.markdown
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		w.block()
		if md {
			w.sb.WriteString(strings.Repeat("#", int(n.Data[1]-'0')) + " ")
		}
		w.children(n)
		w.block()
	case atom.P, atom.Div, atom.Section, atom.Table, atom.Blockquote, atom.Figure, atom.Dl:
		w.block()
		if md && n.DataAtom == atom.Blockquote {
			w.sb.WriteString("> ")
		}
		w.children(n)
		w.block()
	case atom.Br:
		w.sb.WriteString("\n")
	case atom.Tr, atom.Dt, atom.Dd:
		w.sb.WriteString("\n")
		w.children(n)
	case atom.Ul, atom.Ol:
		w.list = append(w.list, n.DataAtom == atom.Ol)
		w.sb.WriteString("\n")
		w.children(n)
		w.list = w.list[:len(w.list)-1]
		w.block()
	case atom.Li:
		w.sb.WriteString("\n" + strings.Repeat("  ", max(len(w.list)-1, 0)) + "- ")
		w.children(n)
	case atom.Pre:
		w.block()
		if md {
			w.sb.WriteString("```\n")
		}
		w.pre++
		w.children(n)
		w.pre--
		if md {
			w.sb.WriteString("\n```")
		}
		w.block()
	case atom.Code:
		if md && w.pre == 0 {
			w.text("`" + strings.TrimSpace(textOf(n)) + "`")
			return
		}
		w.children(n)
	case atom.Strong, atom.B:
		if md {
			w.text("**" + strings.Join(strings.Fields(textOf(n)), " ") + "**")
			return
		}
		w.children(n)
	case atom.Em, atom.I:
		if md {
			w.text("*" + strings.Join(strings.Fields(textOf(n)), " ") + "*")
			return
		}
		w.children(n)
	case atom.A:
		href := ""
		for _, a := range n.Attr {
			if a.Key == "href" {
				href = a.Val
			}
		}
		label := strings.Join(strings.Fields(textOf(n)), " ")
		if md && label != "" && (strings.HasPrefix(href, "http://") || strings.HasPrefix(href, "https://")) {
			w.text("[" + label + "](" + href + ")")
			return
		}
		w.children(n)
	case atom.Img:
		if md {
			for _, a := range n.Attr {
				if a.Key == "alt" && strings.TrimSpace(a.Val) != "" {
					w.text("[image: " + strings.TrimSpace(a.Val) + "]")
				}
			}
		}
	default:
		w.children(n)
	}
}

package recall

import (
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"
)

// The keyword index behind `memory search|inspect`, `knowledge
// search|inspect`, `tavern context` and the MCP search tool: BM25 over
// stemmed words, with three weighted fields and prefix expansion.
//
// Words. Text is lower-cased and split into letters and digits ("-", "_"
// and "'" split too); English stopwords and one-letter words are dropped;
// every word is reduced to its Snowball (Porter2) English stem, so
// "databases", "database" and "Database" are one term.
//
// Prefix expansion. A query word of four or more letters also matches the
// indexed words it is a prefix of ("postgres" finds "PostgreSQL",
// "auth" does not: too short), at PrefixWeight of an exact match: a
// stemmer cannot know that a product name and its short form are one
// thing, and people type the short form.
//
// Scoring. BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N-df+0.5)/(df+0.5)))
// over a weighted term frequency: a word in the title counts TitleWeight
// times, in the body once, in the tags (a knowledge entry's domain, a
// memory's topic) TagWeight. Scores are comparable within one search only.
//
// Related (inspect) uses the entry's own 20 most telling title and body
// words (tf x idf) as the query, each weighted 1 + ln(tf), and leaves the
// tags out on both sides: every
// entry of a domain carries the domain's name, which says nothing about how
// two entries relate, and used to decide most of an inspect ranking.
//
// The index is built per query from the documents (memory of one agent, or
// all knowledge): at the scale the design assumes (<1000 memories per
// agent, <10k knowledge entries) tokenising costs less than reading the
// files, which has to happen anyway to see hand edits. There is no stored
// index to go stale.

// Field weights and parameters of the ranking.
const (
	TitleWeight  = 2.0
	TagWeight    = 0.5
	PrefixWeight = 0.6
	minPrefix    = 4 // letters a query word needs to match by prefix
	relatedTerms = 20
	bm25K1       = 1.2
	bm25B        = 0.75
)

// IndexEntry is one document given to BuildIndex.
type IndexEntry struct {
	ID    string
	Title string // weighted TitleWeight
	Text  string
	Tags  string // weighted TagWeight; ignored by Related
}

// Hit is a search result: an entry id and its score.
type Hit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// Index is a BM25 index over a fixed set of entries.
type Index struct {
	ids   []string
	pos   map[string]int
	docs  []docTerms
	df    map[string]int
	n     float64
	avgdl float64 // all fields, weighted
	avgcl float64 // title and body only (Related)
	// vocab is every indexed word as written (lower-cased, unstemmed),
	// sorted, for prefix expansion; stemOf maps it to its term.
	vocab  []string
	stemOf map[string]string
}

type docTerms struct {
	tf      map[string]float64 // weighted, all fields
	content map[string]float64 // title and body only
	dl, cl  float64
	word    map[string]string // term -> a word of this entry that has it (for Keywords)
}

// BuildIndex indexes entries.
func BuildIndex(entries []IndexEntry) *Index {
	ix := &Index{pos: map[string]int{}, df: map[string]int{}, stemOf: map[string]string{}}
	var sumdl, sumcl float64
	for i, e := range entries {
		d := docTerms{tf: map[string]float64{}, content: map[string]float64{}, word: map[string]string{}}
		add := func(text string, w float64, content bool) {
			for _, tok := range Tokenize(text) {
				t := ix.stem(tok)
				d.tf[t] += w
				d.dl += w
				if content {
					d.content[t] += w
					d.cl += w
					if _, ok := d.word[t]; !ok {
						d.word[t] = tok
					}
				}
			}
		}
		add(e.Title, TitleWeight, true)
		add(e.Text, 1, true)
		add(e.Tags, TagWeight, false)
		for t := range d.tf {
			ix.df[t]++
		}
		sumdl += d.dl
		sumcl += d.cl
		ix.ids = append(ix.ids, e.ID)
		ix.pos[e.ID] = i
		ix.docs = append(ix.docs, d)
	}
	ix.n = float64(len(entries))
	if ix.n > 0 {
		ix.avgdl, ix.avgcl = sumdl/ix.n, sumcl/ix.n
	}
	ix.vocab = make([]string, 0, len(ix.stemOf))
	for w := range ix.stemOf {
		ix.vocab = append(ix.vocab, w)
	}
	sort.Strings(ix.vocab)
	return ix
}

// stem returns the term of a word, remembering the word for prefix
// expansion.
func (ix *Index) stem(w string) string {
	if t, ok := ix.stemOf[w]; ok {
		return t
	}
	t := Stem(w)
	ix.stemOf[w] = t
	return t
}

// Stem reduces a lower-cased word to its Snowball English stem.
func Stem(w string) string { return english.Stem(w, true) }

// Terms returns the stemmed terms of text, in order, stopwords dropped:
// what BuildIndex indexes.
func Terms(text string) []string {
	toks := Tokenize(text)
	for i, t := range toks {
		toks[i] = Stem(t)
	}
	return toks
}

func (ix *Index) idf(t string) float64 {
	df := float64(ix.df[t])
	return math.Log(1 + (ix.n-df+0.5)/(df+0.5))
}

// query turns a query text into weighted terms: the stems of its words
// (weight 1) and, for words of minPrefix letters or more, the stems of the
// indexed words they are a prefix of (PrefixWeight).
func (ix *Index) query(text string) map[string]float64 {
	q := map[string]float64{}
	for _, w := range Tokenize(text) {
		q[Stem(w)] = 1
	}
	for _, w := range Tokenize(text) {
		if len([]rune(w)) < minPrefix {
			continue
		}
		for i := sort.SearchStrings(ix.vocab, w); i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], w); i++ {
			if t := ix.stemOf[ix.vocab[i]]; q[t] < PrefixWeight {
				q[t] = PrefixWeight
			}
		}
	}
	for t := range q {
		if ix.df[t] == 0 {
			delete(q, t) // a word no entry has
		}
	}
	return q
}

// Search ranks the entries by BM25 against query, best first; entries
// sharing no term with it are left out. Ties keep index order.
func (ix *Index) Search(query string, limit int) []Hit {
	return ix.rank(ix.query(query), "", false, limit)
}

// Matches reports, for each entry, whether every word of query matches one
// of its terms (by stem or by prefix): the "all words" test of `tavern
// context`. A query without words matches nothing.
func (ix *Index) Matches(query string) []bool {
	words := Tokenize(query)
	out := make([]bool, len(ix.docs))
	if len(words) == 0 {
		return out
	}
	alts := make([]map[string]float64, len(words))
	for i, w := range words {
		alts[i] = ix.query(w)
	}
	for d := range ix.docs {
		out[d] = true
		for _, alt := range alts {
			hit := false
			for t := range alt {
				if ix.docs[d].tf[t] > 0 {
					hit = true
					break
				}
			}
			if !hit {
				out[d] = false
				break
			}
		}
	}
	return out
}

// Related ranks the other entries by similarity to entry id: `inspect`.
// It returns nil if id is not in the index.
func (ix *Index) Related(id string, limit int) []Hit {
	i, ok := ix.pos[id]
	if !ok {
		return nil
	}
	q := map[string]float64{}
	for _, t := range ix.topTerms(i, relatedTerms) {
		q[t] = 1 + math.Log(ix.docs[i].content[t]) // a word the entry repeats (or titles) weighs more
	}
	return ix.rank(q, id, true, limit)
}

// topTerms returns the entry's title and body terms with the highest tf x
// idf, best first (ties by term).
func (ix *Index) topTerms(i, limit int) []string {
	type kw struct {
		t string
		x float64
	}
	var ks []kw
	for t, tf := range ix.docs[i].content {
		ks = append(ks, kw{t, tf * ix.idf(t)})
	}
	sort.Slice(ks, func(a, b int) bool {
		if ks[a].x != ks[b].x {
			return ks[a].x > ks[b].x
		}
		return ks[a].t < ks[b].t
	})
	var out []string
	for _, k := range ks {
		if limit > 0 && len(out) >= limit {
			break
		}
		out = append(out, k.t)
	}
	return out
}

// Keywords returns the entry's most telling words (tf x idf over its title
// and body), best first, each as written in the entry.
func (ix *Index) Keywords(id string, limit int) []string {
	i, ok := ix.pos[id]
	if !ok {
		return nil
	}
	var out []string
	for _, t := range ix.topTerms(i, limit) {
		out = append(out, ix.docs[i].word[t])
	}
	return out
}

func (ix *Index) rank(q map[string]float64, skip string, contentOnly bool, limit int) []Hit {
	if len(q) == 0 {
		return nil
	}
	idf := make(map[string]float64, len(q))
	for t := range q {
		idf[t] = ix.idf(t)
	}
	var hits []Hit
	for i, d := range ix.docs {
		if ix.ids[i] == skip {
			continue
		}
		tfs, dl, avg := d.tf, d.dl, ix.avgdl
		if contentOnly {
			tfs, dl, avg = d.content, d.cl, ix.avgcl
		}
		var sc float64
		for t, w := range q {
			tf := tfs[t]
			if tf == 0 {
				continue
			}
			norm := 1.0
			if avg > 0 {
				norm = 1 - bm25B + bm25B*dl/avg
			}
			sc += w * idf[t] * tf * (bm25K1 + 1) / (tf + bm25K1*norm)
		}
		// Round away float noise so equal scores tie deterministically.
		if sc = math.Round(sc*1e9) / 1e9; sc > 0 {
			hits = append(hits, Hit{ID: ix.ids[i], Score: sc})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].Score > hits[b].Score })
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// Tokenize lower-cases text, splits it into words (letters and digits;
// "-", "_" and "'" split too) and drops stopwords and one-letter words.
// The words are not stemmed (see Terms).
func Tokenize(text string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len([]rune(f)) < 2 || stopwords[f] {
			continue
		}
		out = append(out, f)
	}
	return out
}

var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be
	because been before being below between both but by can could did do does doing down during each
	few for from further had has have having he her here hers herself him himself his how i if in into
	is it its itself just me more most my myself no nor not now of off on once only or other our ours
	ourselves out over own same she should so some such than that the their theirs them themselves then
	there these they this those through to too under until up very was we were what when where which
	while who whom why will with would you your yours yourself yourselves also may might must shall us
	let get got via per etc ll re ve don doesn didn isn aren wasn weren won wouldn shouldn couldn`) {
		m[w] = true
	}
	return m
}()

// Matcher tests texts for every word of a query the way the index matches
// them (same stem, or for words of minPrefix letters or more, a prefix of
// one of the text's words), without building an index: `tavern context`
// filters journal lines, messages and items with it.
type Matcher struct {
	words []string
	stems []string
}

// NewMatcher returns a matcher for query. A query without words (only
// stopwords, say) matches nothing.
func NewMatcher(query string) *Matcher {
	m := &Matcher{words: Tokenize(query)}
	for _, w := range m.words {
		m.stems = append(m.stems, Stem(w))
	}
	return m
}

// Match reports whether every query word matches a word of texts.
func (m *Matcher) Match(texts ...string) bool {
	if len(m.words) == 0 {
		return false
	}
	found := make([]bool, len(m.words))
	left := len(m.words)
	stems := map[string]string{}
	for _, text := range texts {
		for _, tok := range Tokenize(text) {
			st, ok := stems[tok]
			if !ok {
				st = Stem(tok)
				stems[tok] = st
			}
			for i, w := range m.words {
				if found[i] {
					continue
				}
				if st == m.stems[i] || (len([]rune(w)) >= minPrefix && strings.HasPrefix(tok, w)) {
					found[i] = true
					if left--; left == 0 {
						return true
					}
				}
			}
		}
	}
	return false
}

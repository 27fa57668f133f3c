package recall

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// The keyword index behind `memory search|inspect` and `knowledge
// search|inspect`: TF-IDF over the entries' text with English stopwords
// removed, and cosine similarity between the weighted vectors.
//
// Weights: tf = 1 + ln(count) (sublinear, so a word repeated ten times is
// not ten times as telling), idf = ln((1+N)/(1+df)) + 1 (smoothed, never
// zero, so a word every entry has still counts a little). Vectors are L2
// normalised, so a score is the cosine in [0, 1].
//
// The index is built per query from the documents (memory of one agent, or
// all knowledge): with the scale the seeds assume (<1000 memories per
// agent, <10k knowledge entries) tokenising is cheaper than reading the
// files, which has to happen anyway to see hand edits. There is no stored
// index to go stale.

// IndexEntry is one document given to BuildIndex.
type IndexEntry struct {
	ID   string
	Text string
}

// Hit is a search result: an entry id and its similarity score.
type Hit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// Index is a TF-IDF index over a fixed set of entries.
type Index struct {
	ids  []string
	vecs []map[string]float64
	idf  map[string]float64
	pos  map[string]int
}

// BuildIndex indexes entries.
func BuildIndex(entries []IndexEntry) *Index {
	ix := &Index{idf: map[string]float64{}, pos: map[string]int{}}
	tfs := make([]map[string]int, len(entries))
	df := map[string]int{}
	for i, e := range entries {
		tf := map[string]int{}
		for _, w := range Tokenize(e.Text) {
			tf[w]++
		}
		for w := range tf {
			df[w]++
		}
		tfs[i] = tf
		ix.ids = append(ix.ids, e.ID)
		ix.pos[e.ID] = i
	}
	n := float64(len(entries))
	for w, d := range df {
		ix.idf[w] = math.Log((1+n)/(1+float64(d))) + 1
	}
	for _, tf := range tfs {
		ix.vecs = append(ix.vecs, ix.weigh(tf))
	}
	return ix
}

func (ix *Index) weigh(tf map[string]int) map[string]float64 {
	v := make(map[string]float64, len(tf))
	var norm float64
	for w, c := range tf {
		idf, ok := ix.idf[w]
		if !ok {
			continue // a query word no entry has
		}
		x := (1 + math.Log(float64(c))) * idf
		v[w] = x
		norm += x * x
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for w := range v {
			v[w] /= norm
		}
	}
	return v
}

func cosine(a, b map[string]float64) float64 {
	if len(b) < len(a) {
		a, b = b, a
	}
	var s float64
	for w, x := range a {
		s += x * b[w]
	}
	return s
}

// Search ranks the entries by similarity to query, best first; entries
// sharing no keyword with it are left out. Ties keep index order.
func (ix *Index) Search(query string, limit int) []Hit {
	tf := map[string]int{}
	for _, w := range Tokenize(query) {
		tf[w]++
	}
	return ix.rank(ix.weigh(tf), "", limit)
}

// Related ranks the other entries by similarity to entry id: `inspect`.
// It returns nil if id is not in the index.
func (ix *Index) Related(id string, limit int) []Hit {
	i, ok := ix.pos[id]
	if !ok {
		return nil
	}
	return ix.rank(ix.vecs[i], id, limit)
}

// Keywords returns the entry's highest-weighted words, best first.
func (ix *Index) Keywords(id string, limit int) []string {
	i, ok := ix.pos[id]
	if !ok {
		return nil
	}
	type kw struct {
		w string
		x float64
	}
	var ks []kw
	for w, x := range ix.vecs[i] {
		ks = append(ks, kw{w, x})
	}
	sort.Slice(ks, func(a, b int) bool {
		if ks[a].x != ks[b].x {
			return ks[a].x > ks[b].x
		}
		return ks[a].w < ks[b].w
	})
	var out []string
	for _, k := range ks {
		if limit > 0 && len(out) >= limit {
			break
		}
		out = append(out, k.w)
	}
	return out
}

func (ix *Index) rank(q map[string]float64, skip string, limit int) []Hit {
	var hits []Hit
	if len(q) == 0 {
		return nil
	}
	for i, v := range ix.vecs {
		if ix.ids[i] == skip {
			continue
		}
		// Round away float noise so equal scores tie deterministically.
		if sc := math.Round(cosine(q, v)*1e9) / 1e9; sc > 0 {
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

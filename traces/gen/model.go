package gen

import (
	"fmt"
	"strings"
)

// Decoder-only transformer models shared by transformer-train and
// llm-serve.
//
// Notation used in every size formula of this package:
//
//	L layers, D d_model, H heads, hd = D/H head dimension, F ffn width,
//	V vocab, C ctx (rows of the learned position table), e bytes per
//	element of the model dtype (fp32 4, bf16 and fp16 2).
//
// Two architectures:
//
//   - gpt2: LayerNorm with weight and bias, biases on every linear layer,
//     one fused QKV projection D→3D, a GELU MLP D→F→D, learned position
//     embeddings (C×D), and the output head tied to the token embedding.
//   - llama: RMSNorm with a weight only, no biases, separate Q, K, V, O
//     projections D→D, a SwiGLU MLP (gate and up D→F, down F→D), rotary
//     position embeddings (no position table), an untied output head.

// lmPreset is a published model shape.
type lmPreset struct {
	name                     string
	arch                     string
	layers, d, heads, ffn, v int64
	ctx                      int64
}

// lmPresets, sorted by name. Parameter counts (from lmModel.params):
// gpt2-small 124.4M, gpt2-medium 354.8M, gpt2-large 774.0M, gpt2-xl
// 1557.6M, llama-7b 6738.4M, llama-13b 13015.9M.
var lmPresets = []lmPreset{
	{"gpt2-large", "gpt2", 36, 1280, 20, 5120, 50257, 1024},
	{"gpt2-medium", "gpt2", 24, 1024, 16, 4096, 50257, 1024},
	{"gpt2-small", "gpt2", 12, 768, 12, 3072, 50257, 1024},
	{"gpt2-xl", "gpt2", 48, 1600, 25, 6400, 50257, 1024},
	{"llama-13b", "llama", 40, 5120, 40, 13824, 32000, 4096},
	{"llama-7b", "llama", 32, 4096, 32, 11008, 32000, 4096},
}

func presetNames() []string {
	var ns []string
	for _, p := range lmPresets {
		ns = append(ns, p.name)
	}
	return ns
}

func findPreset(name string) lmPreset {
	for _, p := range lmPresets {
		if p.name == name {
			return p
		}
	}
	return lmPresets[2]
}

// Bounds that keep a generator's bookkeeping small; real models are far
// below them.
const (
	maxLayers = 10000
	maxDim    = 1 << 24
	maxTokens = 1 << 24
)

// modelParamDocs documents the parameters that describe the model.
func modelParamDocs(dtypeDefault string) []ParamDoc {
	return []ParamDoc{
		{"arch", "model's", "architecture: gpt2 (LayerNorm, biases, GELU MLP, learned positions, tied head) or llama (RMSNorm, no biases, SwiGLU MLP, rotary positions, untied head)"},
		{"ctx", "max(model's, longest sequence)", "context length: rows of gpt2's learned position table (C×D parameters); for llama only a bound on the sequence length"},
		{"d_model", "model's", "hidden size D"},
		{"dtype", dtypeDefault, "fp32, bf16 or fp16: bytes per element e of weights and activations (4, 2, 2)"},
		{"ffn", "model's (gpt2: 4×d_model)", "MLP width F"},
		{"heads", "model's", "attention heads H; must divide d_model (head dimension hd = D/H, even for llama's rotary embedding)"},
		{"layers", "model's", "transformer blocks L (1.." + fmt.Sprint(maxLayers) + ")"},
		{"model", "gpt2-small", "preset giving the default dimensions: " + strings.Join(presetNames(), ", ") + "; explicit parameters override it"},
		{"vocab", "model's", "vocabulary size V"},
	}
}

// lmModel is a resolved transformer shape.
type lmModel struct {
	preset, arch     string
	L, D, H, F, V, C int64
	hd               int64
	dtype            string
	e                int64
	numel            []int64 // elements of each parameter tensor, in parameters() order
}

// readModel resolves the model parameters. minCtx is the longest sequence
// the workload runs, which ctx must cover.
func readModel(p *paramReader, dtypeDefault string, minCtx int64) *lmModel {
	pre := findPreset(p.choice("model", "gpt2-small", presetNames()...))
	m := &lmModel{preset: pre.name}
	m.arch = p.choice("arch", pre.arch, "gpt2", "llama")
	m.L = p.int("layers", pre.layers, 1, maxLayers)
	m.D = p.int("d_model", pre.d, 1, maxDim)
	m.H = p.int("heads", pre.heads, 1, maxDim)
	// GPT-2's MLP is 4×d_model wide; an explicit d_model with a gpt2 preset
	// scales it, an explicit ffn wins.
	ffnDef := pre.ffn
	if p.has("d_model") && m.arch == "gpt2" {
		ffnDef = 4 * m.D
	}
	m.F = p.int("ffn", ffnDef, 1, maxDim)
	m.V = p.int("vocab", pre.v, 1, maxDim)
	m.C = p.int("ctx", max(pre.ctx, minCtx), 1, maxTokens)
	m.dtype = p.choice("dtype", dtypeDefault, "bf16", "fp16", "fp32")
	m.e = dtypeBytes[m.dtype]
	if m.e == 0 {
		m.e = 4
	}
	if m.D%m.H != 0 {
		p.fail("heads", "%d does not divide d_model %d", m.H, m.D)
		m.H = 1
	}
	m.hd = m.D / m.H
	if m.arch == "llama" && m.hd%2 != 0 {
		p.failf("llama's rotary embedding needs an even head dimension, d_model/heads = %d/%d = %d", m.D, m.H, m.hd)
	}
	if m.C < minCtx {
		p.fail("ctx", "%d is shorter than the longest sequence, %d tokens", m.C, minCtx)
	}
	m.buildParams()
	return m
}

func (m *lmModel) gpt2() bool { return m.arch == "gpt2" }

// Per-layer parameter offsets, in the order of model.parameters().
const (
	// gpt2 (nanoGPT / Hugging Face GPT2 module order)
	gLn1W, gLn1B, gQkvW, gQkvB, gProjW, gProjB, gLn2W, gLn2B, gFcW, gFcB, gFc2W, gFc2B, gPerLayer = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
	// llama (Hugging Face LlamaDecoderLayer order)
	lQ, lK, lV, lO, lGate, lUp, lDown, lLn1, lLn2, lPerLayer = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
)

// buildParams lists the parameter tensors and their element counts.
//
//	gpt2:  wte V×D, wpe C×D, per layer [ln_1 w D, b D, c_attn w D×3D, b 3D,
//	       attn c_proj w D×D, b D, ln_2 w D, b D, c_fc w D×F, b F,
//	       mlp c_proj w F×D, b D], ln_f w D, b D (lm_head is wte)
//	llama: embed_tokens V×D, per layer [q, k, v, o D×D each, gate F×D,
//	       up F×D, down D×F, input_layernorm D, post_attention_layernorm D],
//	       norm D, lm_head V×D
func (m *lmModel) buildParams() {
	L, D, F, V, C := m.L, m.D, m.F, m.V, m.C
	n := m.numel[:0]
	if m.gpt2() {
		n = append(n, V*D, C*D)
		for range L {
			n = append(n, D, D, D*3*D, 3*D, D*D, D, D, D, D*F, F, F*D, D)
		}
		n = append(n, D, D)
	} else {
		n = append(n, V*D)
		for range L {
			n = append(n, D*D, D*D, D*D, D*D, F*D, F*D, D*F, D, D)
		}
		n = append(n, D, V*D)
	}
	m.numel = n
}

// lp is the index of parameter off of layer l.
func (m *lmModel) lp(l int64, off int) int {
	if m.gpt2() {
		return int(2 + l*gPerLayer + int64(off))
	}
	return int(1 + l*lPerLayer + int64(off))
}

// embedIdx is the token embedding; headIdx the output head (the same
// tensor for gpt2, whose head is tied); normFIdx the final norm's weight
// (gpt2's bias follows it).
func (m *lmModel) embedIdx() int { return 0 }
func (m *lmModel) headIdx() int {
	if m.gpt2() {
		return 0
	}
	return len(m.numel) - 1
}
func (m *lmModel) normFIdx() int { return len(m.numel) - 2 }

// nParams is the total number of parameters.
func (m *lmModel) nParams() int64 {
	var s int64
	for _, n := range m.numel {
		s += n
	}
	return s
}

// checkWeights checks the largest weight tensors at bytes-per-element b.
func (m *lmModel) checkWeights(c sizeCheck, b int64) {
	c.need("the token embedding V×D", m.V, m.D, b)
	c.need("the MLP weight F×D", m.F, m.D, b)
	c.need("the QKV weight D×3D", m.D, 3*m.D, b)
	if m.gpt2() {
		c.need("the position table C×D", m.C, m.D, b)
	}
}

func (m *lmModel) describe() string {
	return fmt.Sprintf("%s model of %s parameters (layers %d, d_model %d, heads %d, ffn %d, vocab %d; preset %s)",
		m.arch, countString(m.nParams()), m.L, m.D, m.H, m.F, m.V, m.preset)
}

// countString writes a parameter count: exact below a million, else in
// millions with one decimal.
func countString(n int64) string {
	if n < 1e6 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

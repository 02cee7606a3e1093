package gen

import "fmt"

// cnn-train: a torchvision ResNet training loop (PyTorch eager, SGD with
// momentum), one allocation per tensor an op produces.
//
// Shapes. N is the batch, the image is channels×image×image. A convolution
// with kernel k, stride s and padding p maps a side of length n to
// ⌊(n + 2p − k)/s⌋ + 1. The stem is conv 7×7/2 pad 3 to 64 channels (224 →
// 112), BatchNorm, ReLU, max-pool 3×3/2 pad 1 (112 → 56); then four stages
// of widths 64, 128, 256, 512, the first at stride 1 and the others halving
// the side with a stride-2 convolution (56, 28, 14, 7 for 224); then global
// average pooling and a fully connected layer to the classes. ResNet-18 and
// -34 use basic blocks (3×3, 3×3; blocks per stage 2,2,2,2 and 3,4,6,3),
// ResNet-50 bottlenecks (1×1 to the width, 3×3 with the stride, 1×1 to
// 4×width; 3,4,6,3 blocks). A block whose input and output shapes differ
// has a downsample path: a 1×1 convolution with the block's stride and a
// BatchNorm.
//
// Sizes. A feature map of c channels and side n is fm = N·c·n·n·e bytes.
// ReLU and the residual addition run in place (inplace=True, out +=
// identity) and allocate nothing. Per convolution the forward allocates:
//
//	conv output  fm                    (saved by the BatchNorm)
//	bn output    fm                    (saved by the ReLU as its result, and
//	                                    by the next convolution as input)
//	bn mean and invstd  c·4 each       (fp32, saved)
//
// The stem's max-pool allocates its output (fm) and its argmax indices
// (N·64·n·n·8, int64, saved). The head: pooled N·C·e (C = 512 or 2048),
// logits N·K·e (K classes), fp32 log-softmax N·K·4 (saved), the loss (4).
//
// Parameters (numel×e each; weights of a convolution cout·cin·k·k, of
// BatchNorm c and c for weight and bias, of the FC K·C and K) are allocated
// in parameter order at the start, each BatchNorm followed by its running
// mean and variance (c·e each) and num_batches_tracked (8 bytes), which
// persist.
//
// Per step: "step:N" (images N·channels·image·image·e, labels N·8),
// "forward" (stem, blocks, head), "backward" (head, blocks in reverse —
// see bwdBlock — then the stem), "optimizer" (trainState.step: SGD momentum
// buffers created on step 0), then the loss, images and labels are freed.
var cnnSpec = &kindSpec{
	kind: CNNTrain,
	params: []ParamDoc{ // sorted by name
		{"batch", "32", "batch size N"},
		{"channels", "3", "input image channels"},
		{"classes", "1000", "output classes K"},
		{"depth", "resnet50", "resnet18, resnet34 or resnet50"},
		{"dtype", "fp32", "fp32, bf16 or fp16: bytes per element e of weights and activations (mixed precision keeps fp32 master weights and momentum)"},
		{"image", "224", "image side in pixels"},
		{"steps", "3", "training steps"},
	},
	build: buildCNN,
}

// conv is one convolution and the BatchNorm after it.
type conv struct {
	cin, cout, k, stride, pad int64
	in, out                   int64 // side length of input and output
	w, bnW                    int   // parameter indices: conv weight, bn weight (bias follows)
	fm                        int64 // bytes of the output feature map
}

// convState holds one conv+bn's saved tensors.
type convState struct {
	c, b, mean, invstd uint64
}

type resBlock struct {
	convs []conv // 2 (basic) or 3 (bottleneck)
	ds    *conv  // downsample path, if any
	inFM  int64  // bytes of the block's input feature map
	st    []convState
	dsSt  convState
	out   uint64 // the block's output (last bn output, modified in place)
}

type cnnGen struct {
	e            *emitter
	ts           *trainState
	N, eb        int64
	steps        int64
	imgBytes     int64
	stem         conv
	poolSide     int64
	poolFM, idxB int64 // max-pool output bytes, its indices' bytes
	blocks       []resBlock
	C, K         int64
	fcW          int // fc weight index (bias follows)
	bnIdx        []int
	bnC          []int64
	stemSt       convState
}

func side(n, k, s, p int64) int64 { return (n+2*p-k)/s + 1 }

func buildCNN(p *paramReader, seed uint64) (*plan, error) {
	depth := p.choice("depth", "resnet50", "resnet18", "resnet34", "resnet50")
	N := p.int("batch", 32, 1, maxTokens)
	chans := p.int("channels", 3, 1, maxDim)
	img := p.int("image", 224, 1, maxDim)
	K := p.int("classes", 1000, 1, maxDim)
	dtype := p.choice("dtype", "fp32", "bf16", "fp16", "fp32")
	steps := p.int("steps", 3, 1, 1<<40)
	if err := p.err(); err != nil {
		return nil, err
	}
	eb := dtypeBytes[dtype]
	c := sizeCheck{p}
	c.need("the input images N×channels×image×image×e", N, chans, img, img, eb)
	c.need("the logits N×K×4", N, K, 4)
	c.need("the fc weight K×2048×4", K, 2048, 4)
	c.need("the stem weight 64×channels×7×7×4", chans, 64*49*4)
	ps := side(side(img, 7, 2, 3), 3, 2, 1)
	c.need("the max-pool indices N×64×side×side×8", N, 64, ps, ps, 8)
	if err := p.err(); err != nil {
		return nil, err
	}
	g := &cnnGen{N: N, eb: eb, steps: steps, K: K}
	g.imgBytes = N * chans * img * img * eb

	var numel []int64
	addConv := func(cv *conv) {
		cv.w = len(numel)
		numel = append(numel, cv.cout*cv.cin*cv.k*cv.k)
		cv.bnW = len(numel)
		numel = append(numel, cv.cout, cv.cout)
		cv.out = side(cv.in, cv.k, cv.stride, cv.pad)
		var ok bool
		if cv.fm, ok = product(N, cv.cout, cv.out, cv.out, eb); !ok {
			c.need(fmt.Sprintf("a feature map N×%d×%d×%d×e", cv.cout, cv.out, cv.out), N, cv.cout, cv.out, cv.out, eb)
			cv.fm = 1
		}
		g.bnIdx = append(g.bnIdx, cv.bnW)
		g.bnC = append(g.bnC, cv.cout)
	}
	g.stem = conv{cin: chans, cout: 64, k: 7, stride: 2, pad: 3, in: img}
	addConv(&g.stem)
	g.poolSide = side(g.stem.out, 3, 2, 1)
	g.poolFM = N * 64 * g.poolSide * g.poolSide * eb
	g.idxB = N * 64 * g.poolSide * g.poolSide * 8

	var counts []int
	bottleneck := depth == "resnet50"
	switch depth {
	case "resnet18":
		counts = []int{2, 2, 2, 2}
	default:
		counts = []int{3, 4, 6, 3}
	}
	expansion := int64(1)
	if bottleneck {
		expansion = 4
	}
	cin, n := int64(64), g.poolSide
	for si, nb := range counts {
		width := int64(64) << si
		for bi := range nb {
			stride := int64(1)
			if si > 0 && bi == 0 {
				stride = 2
			}
			b := resBlock{inFM: N * cin * n * n * eb}
			cout := width * expansion
			if bottleneck {
				b.convs = []conv{
					{cin: cin, cout: width, k: 1, stride: 1, pad: 0, in: n},
					{cin: width, cout: width, k: 3, stride: stride, pad: 1},
					{cin: width, cout: cout, k: 1, stride: 1, pad: 0},
				}
			} else {
				b.convs = []conv{
					{cin: cin, cout: width, k: 3, stride: stride, pad: 1, in: n},
					{cin: width, cout: width, k: 3, stride: 1, pad: 1},
				}
			}
			for i := range b.convs {
				if i > 0 {
					b.convs[i].in = b.convs[i-1].out
				}
				addConv(&b.convs[i])
			}
			if stride != 1 || cin != cout {
				b.ds = &conv{cin: cin, cout: cout, k: 1, stride: stride, pad: 0, in: n}
				addConv(b.ds)
			}
			b.st = make([]convState, len(b.convs))
			g.blocks = append(g.blocks, b)
			cin, n = cout, b.convs[len(b.convs)-1].out
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	g.C = cin
	g.fcW = len(numel)
	numel = append(numel, K*g.C, K)

	g.ts = newTrainState(numel, eb, false)
	pn, pb := g.ts.persistent()
	// BatchNorm buffers: running_mean and running_var (c·e each) and
	// num_batches_tracked (8 bytes).
	for _, ch := range g.bnC {
		pn += 3
		pb += 2*ch*eb + 8
	}
	var total int64
	for _, x := range numel {
		total += x
	}
	return &plan{
		desc: fmt.Sprintf("CNN training, %s of %s parameters, batch %d of %d×%d×%d images, %d classes, %s, SGD momentum; %d steps",
			depth, countString(total), N, chans, img, img, K, dtype, steps),
		run:      g.run,
		persistN: pn,
		persistB: pb,
	}, nil
}

func (g *cnnGen) run(e *emitter) {
	g.e, g.ts.e = e, e
	g.initParams()
	for n := range g.steps {
		e.markN("step", n)
		img := e.alloc(g.imgBytes)
		labels := e.alloc(g.N * 8)
		e.mark("forward")
		mp, idx := g.stemFwd(img)
		x := mp
		for i := range g.blocks {
			x = g.fwdBlock(&g.blocks[i], x)
		}
		// Head: pooled = adaptive_avg_pool(x) (N·C·e; saves x, which the
		// last block's ReLU keeps anyway), logits = fc(pooled) (N·K·e),
		// fp32 cast under mixed precision (N·K·4), log_softmax (N·K·4,
		// saved), the loss (4).
		pooled := e.alloc(g.N * g.C * g.eb)
		logits := e.alloc(g.N * g.K * g.eb)
		if g.eb != 4 {
			l32 := e.alloc(g.N * g.K * 4)
			e.free(logits)
			logits = l32
		}
		logp := e.alloc(g.N * g.K * 4)
		e.free(logits)
		loss := e.alloc(4)

		e.mark("backward")
		// seed (4), nll backward (N·K·4), log_softmax backward (N·K·4),
		// cast back under mixed precision (N·K·e), fc backward: the pooled
		// gradient (N·C·e) and the fc weight and bias gradients; avgpool
		// backward: the gradient of the last block's output (its fm).
		seed := e.alloc(4)
		dlogp := e.alloc(g.N * g.K * 4)
		e.free(seed)
		dl := e.alloc(g.N * g.K * 4)
		e.freeAll(dlogp, logp)
		if g.eb != 4 {
			d := e.alloc(g.N * g.K * g.eb)
			e.free(dl)
			dl = d
		}
		dpooled := e.alloc(g.N * g.C * g.eb)
		g.ts.grad(g.fcW)
		g.ts.grad(g.fcW + 1)
		e.freeAll(dl, pooled)
		last := &g.blocks[len(g.blocks)-1]
		dy := e.alloc(last.convs[len(last.convs)-1].fm)
		e.free(dpooled)
		for i := len(g.blocks) - 1; i >= 0; i-- {
			dy = g.bwdBlock(&g.blocks[i], dy)
			if i == 0 {
				// The max-pool output was saved only by the first block's
				// convolutions.
				e.free(mp)
			}
		}
		g.stemBwd(dy, idx)
		e.mark("optimizer")
		g.ts.step(n)
		e.freeAll(loss, img, labels)
	}
}

// initParams allocates the parameters in order, each BatchNorm's weight
// and bias followed by its buffers (running_mean and running_var c·e each,
// num_batches_tracked 8 bytes); then the fp32 master copies under mixed
// precision.
func (g *cnnGen) initParams() {
	e, ts := g.e, g.ts
	bn := 0
	for i, n := range ts.numel {
		ts.params[i] = e.alloc(n * g.eb)
		if bn < len(g.bnIdx) && i == g.bnIdx[bn]+1 {
			e.alloc(g.bnC[bn] * g.eb)
			e.alloc(g.bnC[bn] * g.eb)
			e.alloc(8)
			bn++
		}
	}
	if ts.mixed {
		for i, n := range ts.numel {
			ts.master[i] = e.alloc(n * 4)
		}
	}
}

// convFwd is a convolution and its BatchNorm: the conv output (fm), the bn
// output (fm) and the bn's saved mean and invstd (cout·4 each).
func (g *cnnGen) convFwd(cv *conv) convState {
	e := g.e
	var s convState
	s.c = e.alloc(cv.fm)
	s.b = e.alloc(cv.fm)
	s.mean = e.alloc(cv.cout * 4)
	s.invstd = e.alloc(cv.cout * 4)
	return s
}

// stemFwd: conv1, bn1, in-place ReLU, then the max-pool's output and
// indices.
func (g *cnnGen) stemFwd(img uint64) (mp, idx uint64) {
	g.stemSt = g.convFwd(&g.stem)
	mp = g.e.alloc(g.poolFM)
	idx = g.e.alloc(g.idxB)
	return mp, idx
}

// fwdBlock runs a block on x: each conv+bn in turn (ReLU in place after
// all but the last), then the downsample conv+bn if any (torchvision
// computes it after the main path), the in-place residual addition into
// the last bn output, which frees the downsample bn output (nothing saved
// it), and the final in-place ReLU. The output is the last bn output.
func (g *cnnGen) fwdBlock(b *resBlock, x uint64) uint64 {
	for i := range b.convs {
		b.st[i] = g.convFwd(&b.convs[i])
	}
	if b.ds != nil {
		b.dsSt = g.convFwd(b.ds)
		g.e.free(b.dsSt.b)
	}
	b.out = b.st[len(b.st)-1].b
	return b.out
}

// bnConvBwd is the backward of bn then conv for one conv+bn whose bn
// output gradient is dIn: the bn backward allocates the conv output's
// gradient (fm) and the bn weight and bias gradients, and frees the bn's
// statistics and its saved input (the conv output); the conv backward
// allocates the gradient of its input (inBytes; none when inBytes is 0:
// the image needs no gradient) and its weight gradient, and frees the conv
// output's gradient. It does not free dIn.
func (g *cnnGen) bnConvBwd(cv *conv, s *convState, inBytes int64) uint64 {
	e, ts := g.e, g.ts
	dc := e.alloc(cv.fm)
	ts.grad(cv.bnW)
	ts.grad(cv.bnW + 1)
	e.freeAll(s.mean, s.invstd, s.c)
	var dx uint64
	if inBytes > 0 {
		dx = e.alloc(inBytes)
	}
	ts.grad(cv.w)
	e.free(dc)
	return dx
}

// bwdBlock runs a block's backward from dy, the gradient of its output,
// and returns the gradient of its input:
//
//	final ReLU backward: dr (fm; frees dy and the block output, which the
//	  ReLU saved as its result and the next block has released by now)
//	downsample, if any: bn and conv backward from dr (see bnConvBwd)
//	  giving dxd (the input's bytes)
//	main path in reverse: bn and conv backward; between two convolutions
//	  the ReLU backward allocates the gradient of the earlier bn output
//	  (fm) and frees the conv input gradient and that bn output
//	dx = dx_main + (dxd, or dr for an identity shortcut) (input bytes;
//	  frees both and dr)
func (g *cnnGen) bwdBlock(b *resBlock, dy uint64) uint64 {
	e := g.e
	last := len(b.convs) - 1
	dr := e.alloc(b.convs[last].fm)
	e.freeAll(dy, b.out)
	var dxd uint64
	if b.ds != nil {
		dxd = g.bnConvBwd(b.ds, &b.dsSt, b.inFM)
	}
	d := dr
	for i := last; i >= 0; i-- {
		inBytes := b.inFM
		if i > 0 {
			inBytes = b.convs[i-1].fm
		}
		dx := g.bnConvBwd(&b.convs[i], &b.st[i], inBytes)
		if d != dr {
			e.free(d)
		}
		if i > 0 {
			// ReLU backward between convolutions.
			d = e.alloc(b.convs[i-1].fm)
			e.freeAll(dx, b.st[i-1].b)
		} else {
			d = dx
		}
	}
	out := e.alloc(b.inFM)
	e.free(d)
	if dxd != 0 {
		e.freeAll(dxd, dr)
	} else {
		e.free(dr)
	}
	return out
}

// stemBwd: max-pool backward (the stem bn output's bytes; frees dy and the
// indices), ReLU backward (same; frees the pool gradient and the bn output,
// saved by the ReLU and the pool), then bn and conv backward (no gradient
// for the image), freeing the ReLU gradient.
func (g *cnnGen) stemBwd(dy, idx uint64) {
	e := g.e
	dp := e.alloc(g.stem.fm)
	e.freeAll(dy, idx)
	dr := e.alloc(g.stem.fm)
	e.freeAll(dp, g.stemSt.b)
	g.bnConvBwd(&g.stem, &g.stemSt, 0)
	e.free(dr)
}

"""Per-user fine-tuning for Shenoy & Nguyen's comparison (``oov_benchmark``): OOV-as-UNK fine-tuning of the
whole float model (``FineTuner``) and OOV expansion, the same with the OOV adapter trained jointly
(``JointTuner``, its weights initialized at each sigma of ``SIGMA_GRID``).
"""

from __future__ import annotations

import numpy as np


class FineTuner:
    """Shenoy's OOV-as-UNK baseline: the whole float model fine-tuned on one user (Adam, early stop)."""

    def __init__(self, run_dir: str, learning_rate: float, max_epochs: int, batch_size: int = 16):
        import tensorflow as tf

        from keyboard_lm.models.run_dir import build_loaded_model, load_run

        self.tf = tf
        self.run = load_run(run_dir)
        self.seq_len = self.run.info.get("hyperparameters", {}).get("seq_len", 20)
        self.model = build_loaded_model(self.run)
        self.initial = [w.numpy() for w in self.model.trainable_weights]
        self.lr, self.max_epochs, self.batch_size = learning_rate, max_epochs, batch_size
        self._extend()

        @tf.function(reduce_retracing=True)
        def losses(x, y):
            logits = self._forward(x)
            mask = tf.cast(y != 0, tf.float32)
            ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            return tf.reduce_sum(ce * mask), tf.reduce_sum(mask)

        # Adam (the optimizer the global model was trained with), its moments reset for every user
        self.moments = [(tf.Variable(tf.zeros_like(w)), tf.Variable(tf.zeros_like(w))) for w in self.variables()]
        self.t = tf.Variable(0.0)

        @tf.function(reduce_retracing=True)
        def step(x, y):
            with tf.GradientTape() as tape:
                total, count = losses(x, y)
                loss = total / tf.maximum(count, 1.0)
            grads = tape.gradient(loss, self.variables())
            grads, _ = tf.clip_by_global_norm(grads, 5.0)
            self.t.assign_add(1.0)
            for v, g, (m, s) in zip(self.variables(), grads, self.moments):
                g = tf.convert_to_tensor(g)
                m.assign(0.9 * m + 0.1 * g)
                s.assign(0.999 * s + 0.001 * g * g)
                m_hat = m / (1.0 - 0.9 ** self.t)
                s_hat = s / (1.0 - 0.999 ** self.t)
                v.assign_sub(self.lr * m_hat / (tf.sqrt(s_hat) + 1e-7))

        self._losses, self._step = losses, step

    def examples(self, sentences):
        from keyboard_lm.data.examples import corpus_examples

        ex = list(corpus_examples(sentences, self.run.vocab, self.seq_len))
        return (np.array([x for x, _ in ex], np.int32).reshape(-1, self.seq_len),
                np.array([y for _, y in ex], np.int32).reshape(-1, self.seq_len))

    def loss(self, x, y) -> float:
        total, count = self._losses(x, y)
        return float(total) / max(float(count), 1.0)

    def reset(self):
        for v, w in zip(self.model.trainable_weights, self.initial):
            v.assign(w)
        for m, s in self.moments:
            m.assign(self.tf.zeros_like(m))
            s.assign(self.tf.zeros_like(s))
        self.t.assign(0.0)

    def _extend(self) -> None:
        """Variables a subclass adds to the model before the optimizer's state is made (none here)."""

    def _forward(self, x):
        """Logits of token ids ``x`` (inside the tf.functions)."""
        return self.model(x, training=False)

    def variables(self) -> list:
        """What fine-tuning trains (and ``fit`` restores at the kept epoch)."""
        return list(self.model.trainable_weights)

    def score(self, val, vx, vy) -> tuple[float, float]:
        """(validation EMR3, validation loss): Shenoy & Nguyen stop on EMR3; the loss breaks its ties."""
        from keyboard_lm.char_encoder.evaluation import exact_match

        words = [w for s in val for w in s]
        return exact_match(self.predictions(val), words, ())["emr3"], self.loss(vx, vy)

    def fit(self, train, val, seed: int = 0, patience: int = 2) -> dict:
        """Up to ``max_epochs`` epochs; the epoch of the best validation EMR3 is kept (epoch 0: no change),
        stopping after ``patience`` epochs without a gain."""
        self.reset()
        x, y = self.examples(train)
        vx, vy = self.examples(val)

        def better(a, b):
            return a[0] > b[0] or (a[0] == b[0] and a[1] < b[1])

        best_score, best_epoch = self.score(val, vx, vy), 0
        best = [v.numpy() for v in self.variables()]
        rng = np.random.default_rng(seed)
        for epoch in range(1, self.max_epochs + 1):
            order = rng.permutation(len(x))
            for i in range(0, len(x), self.batch_size):
                b = order[i:i + self.batch_size]
                self._step(x[b], y[b])
            score = self.score(val, vx, vy)
            if better(score, best_score):
                best_score, best_epoch, best = score, epoch, [v.numpy() for v in self.variables()]
            elif epoch - best_epoch >= patience:
                break
        for v, w in zip(self.variables(), best):
            v.assign(w)
        return {"kept_epoch": best_epoch, "validation_emr3": best_score[0], "validation_loss": best_score[1]}

    def predictions(self, sentences) -> list[list[str]]:
        """Top-3 spellings at every word of ``sentences`` (specials never suggested), in order."""
        x, y = self.examples(sentences)
        logits = self.model.predict(x, verbose=0, batch_size=256)
        logits[..., :4] = -np.inf
        top = np.argsort(-logits, axis=-1)[..., :3]
        vocab = self.run.vocab
        out = []
        for b in range(len(y)):
            for t in range(self.seq_len):
                if y[b, t] not in (0, 2):  # pad, eos: not a word
                    out.append([vocab.token_of(int(i)) for i in top[b, t]])
        return out


#: Shenoy & Nguyen's initialization grid for the OOV adapter: every adapter weight drawn from N(0, sigma^2).
SIGMA_GRID = (0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)


class JointTuner(FineTuner):
    """Shenoy & Nguyen's OOV expansion: the float model fine-tuned on one user together with an OOV adapter.

    The user's personal words (their most frequent OOV spellings of the personalize split) are embedded by
    the char encoder, mapped by a residual adapter (LayerNorm at identity, one hidden layer of ``hidden`` ReLU
    units; its two weight matrices and biases drawn from N(0, sigma^2)) and appended to the tied table, so
    they are predicted, and read as context, like any word. Model and adapter train together (Adam, batches
    of 16, clip 5), and the epoch of the best validation EMR3 is kept (``FineTuner.fit``)."""

    def __init__(self, run_dir: str, encoder_path: str, learning_rate: float, max_epochs: int, hidden: int = 960,
                 batch_size: int = 16):
        from keyboard_lm.inference.personal_words import CharEncoderFile

        self.encoder, self.hidden = CharEncoderFile(encoder_path), hidden
        self.words: list[str] = []
        self.sigma, self.seed = 0.0, 0
        super().__init__(run_dir, learning_rate, max_epochs, batch_size)
        self._logits = self.tf.function(self._forward, reduce_retracing=True)

    def _extend(self) -> None:
        """The adapter's variables and the personal words' base embeddings (none until ``prepare``)."""
        tf = self.tf
        self.embedding, self.rnn = self.model.get_layer("embedding"), self.model.get_layer("rnn")
        self.V, d = (int(n) for n in self.embedding.embeddings.shape)
        self.base = tf.Variable(tf.zeros([0, d]), shape=tf.TensorShape([None, d]), trainable=False)
        self.ln_g, self.ln_b = tf.Variable(tf.ones([d])), tf.Variable(tf.zeros([d]))
        self.w1, self.b1 = tf.Variable(tf.zeros([d, self.hidden])), tf.Variable(tf.zeros([self.hidden]))
        self.w2, self.b2 = tf.Variable(tf.zeros([self.hidden, d])), tf.Variable(tf.zeros([d]))
        self.adapter = [self.ln_g, self.ln_b, self.w1, self.b1, self.w2, self.b2]

    def _table(self):
        tf = self.tf
        e = self.base
        mu, var = tf.nn.moments(e, axes=[1], keepdims=True)
        ln = (e - mu) / tf.sqrt(var + 1e-5) * self.ln_g + self.ln_b
        personal = e + tf.matmul(tf.nn.relu(tf.matmul(ln, self.w1) + self.b1), self.w2) + self.b2
        return tf.concat([self.embedding.table(), personal], 0)

    def _forward(self, x):
        t = self._table()
        h = self.rnn(self.tf.gather(t, x), training=False)
        return self.tf.matmul(self.embedding.quantizer.inputs(h), t, transpose_b=True)

    def variables(self) -> list:
        return [*self.model.trainable_weights, *getattr(self, "adapter", [])]

    def prepare(self, words, sigma: float, seed: int = 0) -> None:
        """The user's personal words and the adapter's initialization scale; ``reset`` applies them."""
        self.words, self.sigma, self.seed = list(words), float(sigma), seed
        self._index = {w: self.V + i for i, w in enumerate(self.words)}
        self.reset()

    def reset(self):
        super().reset()
        if not hasattr(self, "adapter"):
            return
        d = int(self.base.shape[1])
        self.base.assign(self.encoder.encode(self.words).astype(np.float32) if self.words
                         else np.zeros((0, d), np.float32))
        rng = np.random.default_rng(self.seed)
        self.ln_g.assign(np.ones(d, np.float32))
        self.ln_b.assign(np.zeros(d, np.float32))
        for v in (self.w1, self.b1, self.w2, self.b2):
            v.assign((self.sigma * rng.standard_normal(v.shape)).astype(np.float32))

    def examples(self, sentences):
        from keyboard_lm.data.examples import sentence_examples
        from keyboard_lm.text.spec import SPECIAL_TOKENS

        oov, index = SPECIAL_TOKENS.oov_id, getattr(self, "_index", {})
        ex = []
        for sentence in sentences:
            ids = [index.get(w, i) if i == oov else i for i, w in zip(self.run.vocab.encode(sentence), sentence)]
            ex += sentence_examples(ids, self.seq_len)
        return (np.array([x for x, _ in ex], np.int32).reshape(-1, self.seq_len),
                np.array([y for _, y in ex], np.int32).reshape(-1, self.seq_len))

    def predictions(self, sentences) -> list[list[str]]:
        x, y = self.examples(sentences)
        out, vocab = [], self.run.vocab
        for start in range(0, len(x), 256):
            logits = self._logits(x[start:start + 256]).numpy()
            logits[..., :4] = -np.inf
            top = np.argsort(-logits, axis=-1)[..., :3]
            for b in range(len(top)):
                for t in range(self.seq_len):
                    if y[start + b, t] not in (0, 2):
                        out.append([vocab.token_of(int(i)) if i < self.V else self.words[int(i) - self.V]
                                    for i in top[b, t]])
        return out

    def fit_grid(self, words, train, val, sigmas=SIGMA_GRID, seed: int = 0) -> dict:
        """``fit`` at every sigma of the grid; the one of the best validation EMR3 (then loss) is kept."""
        best = None
        for sigma in sigmas:
            self.prepare(words, sigma, seed)
            report = self.fit(train, val, seed=seed)
            key = (report["validation_emr3"], -report["validation_loss"])
            if best is None or key > best[0]:
                best = (key, sigma, report, [v.numpy() for v in self.variables()])
        _, sigma, report, weights = best
        self.prepare(words, sigma, seed)
        for v, w in zip(self.variables(), weights):
            v.assign(w)
        return {**report, "sigma": sigma}

"""The char encoder (Shenoy & Nguyen): a character CNN that maps any spelling into the model's tied
embedding space, so a user's words outside the closed vocabulary can be embedded and predicted.

``model`` builds it, ``fit`` fits it to a model's embeddings (and contexts; ``heldout``: what each epoch
is measured on), ``training`` trains it on a corpus against a trained run and writes the encoder file
(``keyboard_lm.export.char_encoder_export``), and ``evaluation`` measures it. It is trained here, with
TensorFlow; on the phone the exported encoder embeds a user's personal words
(``keyboard_lm.inference.personal_words``). Both read a spelling the same way: ``keyboard_lm.text.spelling``.
"""

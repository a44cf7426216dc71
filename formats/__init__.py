"""Pure parsers and writers of every on-disk file replog reads.

The base of the package holds the vocabulary every layer shares: where a thing
is (`Finding.path/position/offset`), what is wrong with it (`Finding`, codes in
`formats.codes`) and the error types (`formats.errors`). Nothing here prints or
decides policy, and nothing here imports other replog packages.
"""

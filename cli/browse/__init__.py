"""`funes browse`: a read-only web page over a memory, served on loopback.

:mod:`.app` holds the server and what guards it (token, Host, Origin, GET only);
:mod:`.pages` renders each page from the read side (funes.retrieval) as HTML in
which every recalled character is escaped text."""

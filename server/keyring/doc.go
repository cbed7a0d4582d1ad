// Package keyring holds a server's root keys and seals secrets with them.
//
// A root key is 32 random bytes (AES-256) named by a UUID. Its material
// lives only in memory and in the server's keystore directory
// (<data_dir>/keystore, mode 0700), one file per key (<key-id>.json, mode
// 0600, written to a temporary file and renamed into place). Raft holds
// only the keys' metadata (structs.RootKeyMeta); server/keyreplicate
// copies material between servers over the server's RPC, and package
// server decides which key is active.
//
// Encrypt and Decrypt seal with AES-256-GCM (crypto/aes, crypto/cipher): a
// fresh random 12-byte nonce per seal, and additional data that the caller
// derives from the object holding the ciphertext, so a ciphertext moved to
// another object does not open. No hand-written crypto.
//
// Imports: the standard library and structs only.
//
// Concurrency: a Keyring is safe for concurrent use. Adding a key writes
// its file before the key becomes usable, so a key that encrypted anything
// is on disk.
package keyring

// Package sops is what driftback knows of SOPS-encrypted sources (issue
// 53). Flux's kustomize-controller decrypts a SOPS file (spec.decryption)
// before it applies it: the cluster holds the plaintext, and no object
// carries the sops metadata. driftback holds no key, so it can neither
// compare Git's value with live nor write one:
//
//   - the render is compared as Flux applies it: without the top-level
//     sops block or the sops_ keys a dotenv file adds (Without);
//   - a rendered value that is a ciphertext is taken as equal to live,
//     unless managedFields say a person wrote that field: then the
//     analyzer refuses it, its value never shown (Seal);
//   - an encrypted file is never written (EncryptedFile tells one): the
//     analyzer refuses every write into one as encrypted-source.
//
// It imports, of driftback, internal/jsonvalue, internal/kube and
// internal/yamledit.
package sops

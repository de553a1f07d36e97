;;; eglot_check.el --- drive `autodoc serve' from Emacs's eglot in batch mode -*- lexical-binding: t -*-

;; Run by tests/editors/test_emacs.py: `emacs --batch -l eglot_check.el'.  It opens notes of the
;; vault in $AUTODOC_VAULT (eglot roots the project at the note's own folder, as it does
;; without version control), asks what an editor asks (definition on both link kinds,
;; references, workspace/symbol, hover, the outline imenu shows), records the diagnostics the server publishes, and
;; prints one JSON object on its last line of stdout.  No assertion here: the test reads it.

(load (expand-file-name "eglot_common.el" (file-name-directory load-file-name)) nil t)

(defvar autodoc-diagnostics nil "Each publishDiagnostics: (uri . messages-and-ranges).")

(cl-defmethod eglot-handle-notification :before
  (_server (_method (eql textDocument/publishDiagnostics)) &key uri diagnostics
           &allow-other-keys)
  (push (cons uri (mapcar (lambda (d)
                            (let ((range (plist-get d :range)))
                              (vector (plist-get d :message)
                                    (plist-get (plist-get range :start) :line)
                                    (plist-get (plist-get range :start) :character)
                                    (plist-get (plist-get range :end) :character))))
                          diagnostics))
        autodoc-diagnostics))

(defun autodoc-open (rel)
  "Visit REL under the vault in `text-mode' and connect eglot; its buffer."
  (let ((buf (find-file-noselect (expand-file-name rel autodoc-vault))))
    (with-current-buffer buf
      (text-mode)
      (unless (eglot-current-server)
        (apply #'eglot (eglot--guess-contact)))
      (autodoc-wait (lambda () (eglot-current-server)) 60))
    buf))

(defun autodoc-request (buf method params)
  (with-current-buffer buf
    (jsonrpc-request (eglot-current-server) method params :timeout 60)))

(defun autodoc-at (buf line character)
  "textDocument/position params for BUF at 0-based LINE and CHARACTER."
  (with-current-buffer buf
    (list :textDocument (eglot--TextDocumentIdentifier)
          :position (list :line line :character character))))

(defun autodoc-uris (locations)
  "The file names, relative to the vault, and 1-based lines of LSP LOCATIONS (vectors: so
`json-encode' writes arrays, not objects)."
  (vconcat
   (mapcar (lambda (loc)
            (vector (file-relative-name (eglot--uri-to-path (plist-get loc :uri)) autodoc-vault)
                  (1+ (plist-get (plist-get (plist-get loc :range) :start) :line))))
          (cond ((vectorp locations) (append locations nil))
                ((keywordp (car-safe locations)) (list locations)) ; one Location
                (t locations)))))

(defun autodoc-outline (buf)
  "BUF's outline as eglot's imenu reads it (textDocument/documentSymbol): [container name
line] for each heading, container null at the top."
  (with-current-buffer buf
    (let (out)
      (dolist (kind (eglot-imenu))
        (dolist (entry (cdr kind))
          (if (consp (cdr entry))
              (dolist (e (cdr entry))
                (push (vector (car entry) (car e) (line-number-at-pos (cdr e))) out))
            (push (vector nil (car entry) (line-number-at-pos (cdr entry))) out))))
      (vconcat (nreverse out)))))

(let* ((onboarding (autodoc-open "notes/onboarding.md"))
       (server (with-current-buffer onboarding (eglot-current-server)))
       (root (and server (project-root (eglot--project server))))
       ;; the server answers once it has indexed: wait for a symbol outside the note's folder
       (symbols (autodoc-wait
                 (lambda ()
                   (let ((found (autodoc-request onboarding :workspace/symbol
                                                 '(:query "lease recovery"))))
                     (and (> (length found) 0) found)))
                 90))
       (wiki (autodoc-request onboarding :textDocument/definition (autodoc-at onboarding 9 10)))
       (md (autodoc-request onboarding :textDocument/definition (autodoc-at onboarding 10 12)))
       (hover (autodoc-request onboarding :textDocument/hover (autodoc-at onboarding 9 10)))
       (pipeline (autodoc-open "notes/search-pipeline.md"))
       (refs (autodoc-request pipeline :textDocument/references
                              (append (autodoc-at pipeline 0 2)
                                      '(:context (:includeDeclaration :json-false)))))
       (broken (autodoc-open "notes/broken.md"))
       (broken-uri (with-current-buffer broken
                     (plist-get (eglot--TextDocumentIdentifier) :uri)))
       (diags (autodoc-wait (lambda () (cdr (assoc broken-uri autodoc-diagnostics))) 30)))
  (ignore broken)
  (princ "\n")
  (princ (json-encode
          `((eglot_root . ,root)
            (symbols . ,(autodoc-uris (mapcar (lambda (s) (plist-get s :location))
                                              (append symbols nil))))
            (wiki_definition . ,(autodoc-uris wiki))
            (md_definition . ,(autodoc-uris md))
            (hover . ,(let ((c (plist-get hover :contents)))
                        (if (stringp c) c (plist-get c :value))))
            (references . ,(autodoc-uris refs))
            (outline . ,(autodoc-outline pipeline))
            (diagnostics . ,(vconcat diags)))))
  (princ "\n")
  (kill-emacs 0))

"""IAM policies, pure: SRNs, the policy document and its evaluation (no I/O, no clock).

Who attaches which document to which key is the store's and the API's business; this
package only answers "does this set of documents allow this action on this resource".
See ``docs/iam.md``.
"""

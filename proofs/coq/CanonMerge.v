(** * canonmerge's abstract model, for every N

    The model of [spec/] in plain Coq (stdlib only).  A replica's state is a list of fragments
    that holds each content id at most once; two states are equal as sets when they hold the
    same fragments ([forall f, In f a <-> In f b]).  Merge is set union by content id, the
    canonical order is an insertion sort by the key (order value m, then content id).

    Every premise is a [Variable] or [Hypothesis] of the one section [Model], declared where
    the first proof needs it (so no earlier proof can pick it up), and each theorem, once the
    section is closed, carries the premises it uses in its statement.  There is no [Axiom] and
    no [Admitted]: [Print Assumptions] inside the section lists section variables only.
    [canonmerge prove] compiles a copy of this file with one query per theorem inserted before
    [End Model] and checks each statement and premise against its registry (proofs/mechanised.py).

    Correspondence with [spec/] (docs/PROOFS.md says what is and is not linked mechanically):
    - [merge] is [FragmentSet.merge] ([|]): the left state, then the other's fragments whose id
      is new, first payload kept ([merge_is_the_setdefault_loop]);
    - [fragment_set_of] is [FragmentSet.of]: a delivery sequence collected, re-deliveries absorbed;
    - [incl (map id a) (map id b)] is [a <= b] (inclusion of ids);
    - [ltF] is the order of [spec.order_key]: [ltM] on the order values, ties broken by [ltI]
      on the ids;
    - [canonical_order] is [spec.canonical_order] (a stable sort by the key, no dedup);
    - [bag_order] is [spec.bag_order] (arrival order, duplicates kept). *)

From Coq Require Import List Bool Sorting.Sorted.
Import ListNotations.

(** [tauto] on a goal that needs none of the universal hypotheses in scope (the section's
    premises among them): clearing them first keeps it fast and keeps them out of the proof. *)
Ltac propositional := repeat match goal with H : forall _, _ |- _ => clear H end; tauto.

Section Model.

(** ** Premises about ids (the order's premises come with the key, below) *)

(** Fragments and their content ids; ids are compared as bytes, so their equality is decidable. *)
Variable Frag : Type.
Variable Id : Type.
Variable id : Frag -> Id.
Variable id_eq_dec : forall i j : Id, {i = j} + {i <> j}.

(** ** The state: merge as union by content id *)

(** The fragments of [l] whose id is neither in [seen] nor earlier in [l]: the loop body of
    [FragmentSet.merge] / [FragmentSet.of] ([table.setdefault(cid, item)]). *)
Fixpoint news (seen : list Id) (l : list Frag) : list Frag :=
  match l with
  | [] => []
  | f :: t => if in_dec id_eq_dec (id f) seen then news seen t else f :: news (id f :: seen) t
  end.

Definition merge (a b : list Frag) : list Frag := a ++ news (map id a) b.

Definition fragment_set_of (deliveries : list Frag) : list Frag := merge [] deliveries.

(** One step of the Python loop: keep [st] when [f]'s id is there, else append [f]. *)
Definition setdefault (st : list Frag) (f : Frag) : list Frag :=
  if in_dec id_eq_dec (id f) (map id st) then st else st ++ [f].

Lemma news_seen_equivalent : forall l s1 s2,
  (forall i, In i s1 <-> In i s2) -> news s1 l = news s2 l.
Proof.
  induction l as [|f t IH]; intros s1 s2 E; simpl; [reflexivity|].
  destruct (in_dec id_eq_dec (id f) s1) as [H1|H1];
    destruct (in_dec id_eq_dec (id f) s2) as [H2|H2].
  - apply IH; exact E.
  - exfalso; apply H2, E, H1.
  - exfalso; apply H1, E, H2.
  - f_equal; apply IH; intro i; simpl; rewrite (E i); reflexivity.
Qed.

Lemma merge_is_the_setdefault_loop : forall a b, merge a b = fold_left setdefault b a.
Proof.
  intros a b; revert a; induction b as [|f t IH]; intro a; unfold merge in *; simpl.
  - apply app_nil_r.
  - unfold setdefault; destruct (in_dec id_eq_dec (id f) (map id a)) as [H|H].
    + apply IH.
    + rewrite <- IH, <- app_assoc; simpl; f_equal; f_equal.
      apply news_seen_equivalent; intro i; rewrite map_app; simpl.
      rewrite in_app_iff; simpl; propositional.
Qed.

Lemma news_sound : forall l seen f, In f (news seen l) -> In f l /\ ~ In (id f) seen.
Proof.
  induction l as [|g t IH]; intros seen f H; simpl in H; [contradiction|].
  destruct (in_dec id_eq_dec (id g) seen) as [Hg|Hg].
  - destruct (IH _ _ H); simpl; auto.
  - destruct H as [<-|H]; [simpl; auto|].
    destruct (IH _ _ H) as [Ht Hs]; simpl in Hs; simpl; auto.
Qed.

Lemma news_complete : forall l seen f,
  In f l -> ~ In (id f) seen -> exists g, In g (news seen l) /\ id g = id f.
Proof.
  induction l as [|g t IH]; intros seen f Hin Hs; [contradiction|simpl].
  destruct (in_dec id_eq_dec (id g) seen) as [Hg|Hg].
  - destruct Hin as [<-|Hin]; [contradiction|].
    exact (IH _ _ Hin Hs).
  - destruct (id_eq_dec (id g) (id f)) as [E|E].
    + exists g; simpl; auto.
    + destruct Hin as [<-|Hin]; [contradiction E; reflexivity|].
      destruct (IH (id g :: seen) f Hin) as [h [Hh Eh]].
      * simpl; intros [E'|E']; [exact (E E')|exact (Hs E')].
      * exists h; simpl; auto.
Qed.

Lemma news_ids_distinct : forall l seen, NoDup (map id (news seen l)).
Proof.
  induction l as [|f t IH]; intro seen; simpl; [constructor|].
  destruct (in_dec id_eq_dec (id f) seen) as [H|H]; [apply IH|].
  simpl; constructor; [|apply IH].
  intro Hin; apply in_map_iff in Hin; destruct Hin as [g [Eg Hg]].
  destruct (news_sound _ _ _ Hg) as [_ Hs]; apply Hs; rewrite Eg; simpl; auto.
Qed.

Lemma nodup_app : forall (A : Type) (l l' : list A),
  NoDup l -> NoDup l' -> (forall x, In x l -> ~ In x l') -> NoDup (l ++ l').
Proof.
  intros A l l' H; induction H as [|x l Hx Hl IH]; intros H' D; simpl; [exact H'|].
  constructor.
  - rewrite in_app_iff; intros [Hin|Hin]; [exact (Hx Hin)|exact (D x (or_introl eq_refl) Hin)].
  - apply IH; [exact H'|intros y Hy; apply D; simpl; auto].
Qed.

Lemma merge_ids_distinct : forall a b, NoDup (map id a) -> NoDup (map id (merge a b)).
Proof.
  intros a b Ha; unfold merge; rewrite map_app; apply nodup_app; auto.
  - apply news_ids_distinct.
  - intros i Hi Hn; apply in_map_iff in Hn; destruct Hn as [g [Eg Hg]].
    destruct (news_sound _ _ _ Hg) as [_ Hs]; apply Hs; rewrite Eg; exact Hi.
Qed.

(** ** C1, C2: the state is a join-semilattice *)

Lemma news_app : forall l1 l2 seen,
  news seen (l1 ++ l2) = news seen l1 ++ news (seen ++ map id (news seen l1)) l2.
Proof.
  induction l1 as [|f t IH]; intros l2 seen; simpl.
  - rewrite app_nil_r; reflexivity.
  - destruct (in_dec id_eq_dec (id f) seen) as [H|H]; [apply IH|].
    simpl; rewrite IH; f_equal; f_equal; apply news_seen_equivalent.
    intro i; simpl; rewrite !in_app_iff; simpl; propositional.
Qed.

Lemma news_compose : forall l s t, news s (news t l) = news (s ++ t) l.
Proof.
  induction l as [|f l IH]; intros s t; simpl; [reflexivity|].
  destruct (in_dec id_eq_dec (id f) t) as [Ht|Ht];
    destruct (in_dec id_eq_dec (id f) (s ++ t)) as [Hst|Hst].
  - apply IH.
  - exfalso; apply Hst, in_app_iff; auto.
  - simpl; destruct (in_dec id_eq_dec (id f) s) as [Hs|Hs].
    + rewrite IH; apply news_seen_equivalent; intro i; rewrite !in_app_iff; simpl.
      split; [intros [H|[H|H]]; [auto|subst i; auto|auto]|propositional].
    + exfalso; apply in_app_iff in Hst; propositional.
  - simpl; destruct (in_dec id_eq_dec (id f) s) as [Hs|Hs].
    + exfalso; apply Hst, in_app_iff; auto.
    + f_equal; rewrite IH; apply news_seen_equivalent; intro i; simpl; rewrite !in_app_iff; simpl; propositional.
Qed.

Theorem c1_coq_associative : forall a b c : list Frag, merge (merge a b) c = merge a (merge b c).
Proof.
  intros a b c; unfold merge; rewrite <- app_assoc; f_equal.
  rewrite news_app, map_app; f_equal.
  rewrite news_compose; apply news_seen_equivalent; intro i; rewrite !in_app_iff; split; [propositional|].
  intros [H|H]; [exact H|].
  destruct (in_dec id_eq_dec i (map id a)) as [Ha|Ha]; [left; exact Ha|right].
  apply in_map_iff in H; destruct H as [g [<- Hg]].
  destruct (news_complete _ _ _ Hg Ha) as [h [Hh Eh]].
  rewrite <- Eh; apply in_map; exact Hh.
Qed.

Theorem c1_coq_idempotent : forall a : list Frag, merge a a = a.
Proof.
  intro a; unfold merge.
  assert (H : forall l seen, (forall f, In f l -> In (id f) seen) -> news seen l = []).
  { induction l as [|f t IH]; intros seen H; simpl; [reflexivity|].
    destruct (in_dec id_eq_dec (id f) seen) as [Hf|Hf].
    - apply IH; intros g Hg; apply H; simpl; auto.
    - contradiction Hf; apply H; simpl; auto. }
  rewrite H; [apply app_nil_r|intros f Hf; apply in_map; exact Hf].
Qed.

Theorem c2_coq_inflationary : forall a b : list Frag, incl (map id a) (map id (merge a b)).
Proof. intros a b i H; unfold merge; rewrite map_app; apply in_app_iff; auto. Qed.

Theorem c2_coq_absorbing : forall a b : list Frag, incl (map id b) (map id a) -> merge a b = a.
Proof.
  intros a b H; unfold merge.
  assert (N : forall l, incl (map id l) (map id a) -> news (map id a) l = []).
  { induction l as [|f t IH]; intro Hl; simpl; [reflexivity|].
    destruct (in_dec id_eq_dec (id f) (map id a)) as [Hf|Hf].
    - apply IH; intros i Hi; apply Hl; simpl; auto.
    - contradiction Hf; apply Hl; simpl; auto. }
  rewrite N; [apply app_nil_r|exact H].
Qed.

Theorem c2_coq_least_upper_bound : forall a b c : list Frag,
  incl (map id a) (map id c) -> incl (map id b) (map id c) -> incl (map id (merge a b)) (map id c).
Proof.
  intros a b c Ha Hb i Hi; unfold merge in Hi; rewrite map_app, in_app_iff in Hi.
  destruct Hi as [Hi|Hi]; [apply Ha; exact Hi|].
  apply in_map_iff in Hi; destruct Hi as [f [<- Hf]].
  apply Hb, in_map; exact (proj1 (news_sound _ _ _ Hf)).
Qed.

(** Hash-injectivity: equal content ids mean equal fragments.  Declared here, after the
    lemmas and laws that hold without it, so that no proof above can pick it up. *)
Hypothesis id_injective : forall f g : Frag, id f = id g -> f = g.

Lemma merge_in : forall a b f, In f (merge a b) <-> In f a \/ In f b.
Proof.
  intros a b f; unfold merge; rewrite in_app_iff; split.
  - intros [H|H]; [auto|right; exact (proj1 (news_sound _ _ _ H))].
  - intros [H|H]; [auto|].
    destruct (in_dec id_eq_dec (id f) (map id a)) as [Ha|Ha].
    + left; apply in_map_iff in Ha; destruct Ha as [g [Eg Hg]].
      rewrite <- (id_injective g f Eg); exact Hg.
    + right; destruct (news_complete _ _ _ H Ha) as [g [Hg Eg]].
      rewrite <- (id_injective g f Eg); exact Hg.
Qed.

Theorem c1_coq_merge_is_union : forall (a b : list Frag) (f : Frag),
  In f (merge a b) <-> In f a \/ In f b.
Proof. exact merge_in. Qed.

Theorem c1_coq_commutative : forall (a b : list Frag) (f : Frag),
  In f (merge a b) <-> In f (merge b a).
Proof. intros a b f; rewrite !merge_in; propositional. Qed.

(** ** C5 (on abstract orders): the key is a strict total order on distinct fragments *)

(** The order value m of a fragment and a strict total order on order values: in [spec] the
    unsigned order on [total_order_bits(m)] (C5's Z3 rows prove that order is IEEE totalOrder). *)
Variable M : Type.
Variable m : Frag -> M.
Variable ltM : M -> M -> bool.
Hypothesis ltM_irreflexive : forall x : M, ltM x x = false.
Hypothesis ltM_transitive : forall x y z : M, ltM x y = true -> ltM y z = true -> ltM x z = true.
Hypothesis ltM_trichotomous : forall x y : M, ltM x y = true \/ x = y \/ ltM y x = true.

(** A strict total order on content ids: in [spec] the bytes order of the 32-byte ids. *)
Variable ltI : Id -> Id -> bool.
Hypothesis ltI_irreflexive : forall i : Id, ltI i i = false.
Hypothesis ltI_transitive : forall i j k : Id, ltI i j = true -> ltI j k = true -> ltI i k = true.
Hypothesis ltI_trichotomous : forall i j : Id, ltI i j = true \/ i = j \/ ltI j i = true.

(** The order of [spec.order_key]: by order value, ties broken by content id. *)
Definition ltF (f g : Frag) : bool :=
  ltM (m f) (m g) || (negb (ltM (m g) (m f)) && ltI (id f) (id g)).

Theorem c5_coq_key_lexicographic : forall f g : Frag,
  ltF f g = true <-> ltM (m f) (m g) = true \/ (m f = m g /\ ltI (id f) (id g) = true).
Proof.
  intros f g; unfold ltF; rewrite orb_true_iff, andb_true_iff, negb_true_iff; split.
  - intros [H|[H1 H2]]; [left; exact H|].
    destruct (ltM_trichotomous (m f) (m g)) as [H|[H|H]]; [left; exact H|right; auto|].
    rewrite H in H1; discriminate.
  - intros [H|[H1 H2]]; [left; exact H|right; split; [|exact H2]].
    rewrite H1; apply ltM_irreflexive.
Qed.

Lemma ltF_irreflexive : forall f, ltF f f = false.
Proof. intro f; unfold ltF; rewrite ltM_irreflexive, ltI_irreflexive; reflexivity. Qed.

Lemma ltF_transitive : forall f g h, ltF f g = true -> ltF g h = true -> ltF f h = true.
Proof.
  intros f g h Hfg Hgh; apply c5_coq_key_lexicographic in Hfg, Hgh; apply c5_coq_key_lexicographic.
  destruct Hfg as [A|[A1 A2]]; destruct Hgh as [B|[B1 B2]].
  - left; exact (ltM_transitive _ _ _ A B).
  - left; rewrite <- B1; exact A.
  - left; rewrite A1; exact B.
  - right; split; [congruence|exact (ltI_transitive _ _ _ A2 B2)].
Qed.

Lemma ltF_trichotomous : forall f g, ltF f g = true \/ f = g \/ ltF g f = true.
Proof.
  intros f g; rewrite !c5_coq_key_lexicographic.
  destruct (ltM_trichotomous (m f) (m g)) as [H|[H|H]]; [left; left; exact H| |right; right; left; exact H].
  destruct (ltI_trichotomous (id f) (id g)) as [I|[I|I]].
  - left; right; auto.
  - right; left; apply id_injective; exact I.
  - right; right; right; auto.
Qed.

Theorem c5_coq_key_strict_total :
  (forall f : Frag, ltF f f = false) /\
  (forall f g h : Frag, ltF f g = true -> ltF g h = true -> ltF f h = true) /\
  (forall f g : Frag, ltF f g = true \/ f = g \/ ltF g f = true).
Proof. split; [exact ltF_irreflexive|split; [exact ltF_transitive|exact ltF_trichotomous]]. Qed.

(** ** C3: the canonical order depends only on the set, for every N *)

(** A stable insertion sort by the key, gathering the fragments themselves (no dedup): what
    [spec.canonical_order(items, order_key)] computes on distinct fragments. *)
Fixpoint insert (f : Frag) (l : list Frag) : list Frag :=
  match l with
  | [] => [f]
  | g :: t => if ltF g f then g :: insert f t else f :: g :: t
  end.

Definition canonical_order (l : list Frag) : list Frag := fold_right insert [] l.

(** The render's order from a delivery sequence: collect the set, then sort it. *)
Definition canonical (deliveries : list Frag) : list Frag :=
  canonical_order (fragment_set_of deliveries).

(** BagMerge's order: the arrival order, duplicates kept. *)
Definition bag_order (arrivals : list Frag) : list Frag := arrivals.

Lemma insert_in : forall f l x, In x (insert f l) <-> f = x \/ In x l.
Proof.
  intros f l x; induction l as [|g t IH]; simpl; [reflexivity|].
  destruct (ltF g f); simpl; [|reflexivity].
  rewrite IH; split; intros [A|[A|A]];
    [right; left|left|right; right|right; left|left|right; right]; exact A.
Qed.

Lemma canonical_order_in : forall l x, In x (canonical_order l) <-> In x l.
Proof.
  induction l as [|f t IH]; intro x; simpl; [propositional|].
  rewrite insert_in, IH; propositional.
Qed.

Lemma insert_sorted : forall f l,
  StronglySorted (fun f g => ltF f g = true) l -> ~ In f l ->
  StronglySorted (fun f g => ltF f g = true) (insert f l).
Proof.
  intros f l; induction l as [|g t IH]; intros S N; simpl.
  - constructor; constructor.
  - apply StronglySorted_inv in S; destruct S as [St Fg]; rewrite Forall_forall in Fg.
    destruct (ltF g f) eqn:E.
    + constructor.
      * apply IH; [exact St|intro H; apply N; right; exact H].
      * apply Forall_forall; intros x Hx; apply insert_in in Hx.
        destruct Hx as [<-|Hx]; [exact E|exact (Fg x Hx)].
    + assert (L : ltF f g = true).
      { destruct (ltF_trichotomous f g) as [H|[H|H]]; [exact H| |congruence].
        contradiction N; left; symmetry; exact H. }
      constructor; [constructor; [exact St|apply Forall_forall; exact Fg]|].
      constructor; [exact L|].
      apply Forall_forall; intros x Hx; exact (ltF_transitive _ _ _ L (Fg x Hx)).
Qed.

Lemma canonical_order_sorted : forall l,
  NoDup l -> StronglySorted (fun f g => ltF f g = true) (canonical_order l).
Proof.
  intros l H; induction H as [|x l Hx Hl IH]; simpl; [constructor|].
  apply insert_sorted; [exact IH|rewrite canonical_order_in; exact Hx].
Qed.

(** U(s) for every list s: two lists sorted strictly by the key with the same elements are equal
    (the statement Z3's c3_sorted_unique_base and c3_sorted_unique_step prove by cases). *)
Theorem c3_coq_sorted_unique : forall s t : list Frag,
  StronglySorted (fun f g => ltF f g = true) s -> StronglySorted (fun f g => ltF f g = true) t ->
  (forall f, In f s <-> In f t) -> s = t.
Proof.
  induction s as [|h s IH]; intros t Ss St E.
  - destruct t as [|k t]; [reflexivity|].
    exfalso; apply (proj2 (E k)); left; reflexivity.
  - destruct t as [|k t]; [exfalso; apply (proj1 (E h)); left; reflexivity|].
    apply StronglySorted_inv in Ss; destruct Ss as [Ss Fh].
    apply StronglySorted_inv in St; destruct St as [St Fk].
    rewrite Forall_forall in Fh, Fk.
    assert (Ehk : k = h).
    { destruct (proj1 (E h) (or_introl eq_refl)) as [Hk|Hk]; [exact Hk|].
      destruct (proj2 (E k) (or_introl eq_refl)) as [Hh|Hh]; [exact (eq_sym Hh)|].
      exfalso; pose proof (ltF_transitive _ _ _ (Fk h Hk) (Fh k Hh)) as C.
      rewrite ltF_irreflexive in C; discriminate. }
    subst k; f_equal; apply IH; [exact Ss|exact St|].
    intro f; split; intro Hf.
    + destruct (proj1 (E f) (or_intror Hf)) as [Ef|Ef]; [|exact Ef].
      subst f; pose proof (Fh h Hf) as C; rewrite ltF_irreflexive in C; discriminate.
    + destruct (proj2 (E f) (or_intror Hf)) as [Ef|Ef]; [|exact Ef].
      subst f; pose proof (Fk h Hf) as C; rewrite ltF_irreflexive in C; discriminate.
Qed.

Lemma canonical_order_determined : forall a b : list Frag,
  NoDup (map id a) -> NoDup (map id b) -> (forall f, In f a <-> In f b) ->
  canonical_order a = canonical_order b.
Proof.
  intros a b Ha Hb E; apply c3_coq_sorted_unique.
  - apply canonical_order_sorted, (NoDup_map_inv id); exact Ha.
  - apply canonical_order_sorted, (NoDup_map_inv id); exact Hb.
  - intro f; rewrite !canonical_order_in; apply E.
Qed.

Lemma fragment_set_of_in : forall l f, In f (fragment_set_of l) <-> In f l.
Proof. intros l f; unfold fragment_set_of; rewrite merge_in; simpl; propositional. Qed.

Lemma fragment_set_of_ids_distinct : forall l, NoDup (map id (fragment_set_of l)).
Proof. intro l; apply merge_ids_distinct; constructor. Qed.

Theorem c3_coq_canonical_is_sorted_set : forall l : list Frag,
  StronglySorted (fun f g => ltF f g = true) (canonical l) /\
  (forall f, In f (canonical l) <-> In f l).
Proof.
  intro l; unfold canonical; split.
  - apply canonical_order_sorted, (NoDup_map_inv id), fragment_set_of_ids_distinct.
  - intro f; rewrite canonical_order_in; apply fragment_set_of_in.
Qed.

Theorem c3_coq_canonical_set_determined : forall l1 l2 : list Frag,
  (forall f, In f l1 <-> In f l2) -> canonical l1 = canonical l2.
Proof.
  intros l1 l2 E; apply canonical_order_determined; try apply fragment_set_of_ids_distinct.
  intro f; rewrite !fragment_set_of_in; apply E.
Qed.

(** Merge trees: leaves are delivery sequences, inner nodes merge their children's states. *)
Inductive merge_tree : Type :=
  | Leaf (deliveries : list Frag)
  | Node (left right : merge_tree).

Fixpoint evaluate (t : merge_tree) : list Frag :=
  match t with
  | Leaf l => fragment_set_of l
  | Node x y => merge (evaluate x) (evaluate y)
  end.

Fixpoint leaves (t : merge_tree) : list Frag :=
  match t with
  | Leaf l => l
  | Node x y => leaves x ++ leaves y
  end.

Lemma evaluate_in : forall t f, In f (evaluate t) <-> In f (leaves t).
Proof.
  induction t as [l|x IHx y IHy]; intro f; simpl; [apply fragment_set_of_in|].
  rewrite merge_in, in_app_iff, IHx, IHy; propositional.
Qed.

Lemma evaluate_ids_distinct : forall t, NoDup (map id (evaluate t)).
Proof.
  induction t as [l|x IHx y IHy]; simpl; [apply fragment_set_of_ids_distinct|].
  apply merge_ids_distinct; exact IHx.
Qed.

Theorem c3_coq_merge_trees : forall t1 t2 : merge_tree,
  (forall f, In f (leaves t1) <-> In f (leaves t2)) ->
  canonical_order (evaluate t1) = canonical_order (evaluate t2).
Proof.
  intros t1 t2 E; apply canonical_order_determined; try apply evaluate_ids_distinct.
  intro f; rewrite !evaluate_in; apply E.
Qed.

(** ** C6: for N = 2 the canonical order is one of the two arrival orders *)

Theorem c6_coq_two_fragments : forall f g : Frag, f <> g ->
  canonical [f; g] = canonical [g; f] /\
  (canonical [f; g] = bag_order [f; g] \/ canonical [f; g] = bag_order [g; f]).
Proof.
  intros f g D; split.
  - apply c3_coq_canonical_set_determined; intro x; simpl; propositional.
  - assert (S : fragment_set_of [f; g] = [f; g]).
    { unfold fragment_set_of, merge; simpl.
      destruct (id_eq_dec (id f) (id g)) as [E|E]; [contradiction D; apply id_injective; exact E|].
      destruct (in_dec id_eq_dec (id g) [id f]) as [I|I]; [|reflexivity].
      destruct I as [I|I]; [contradiction E|contradiction]. }
    unfold canonical, bag_order; rewrite S; simpl.
    destruct (ltF g f); [right|left]; reflexivity.
Qed.

(** ** C7: replicas that delivered the same set hold the same state and the same order *)

(** A replica folds its messages into its state by merge, starting empty.  A message is any
    list of fragments (one fragment, or another replica's whole state); re-delivered,
    reordered and dropped-then-resent messages are just other sequences. *)
Definition replica (messages : list (list Frag)) : list Frag := fold_left merge messages [].

Lemma fold_merge_in : forall ms acc f, In f (fold_left merge ms acc) <-> In f acc \/ In f (concat ms).
Proof.
  induction ms as [|x ms IH]; intros acc f; simpl; [propositional|].
  rewrite IH, merge_in, in_app_iff; propositional.
Qed.

Lemma fold_merge_ids_distinct : forall ms acc,
  NoDup (map id acc) -> NoDup (map id (fold_left merge ms acc)).
Proof.
  induction ms as [|x ms IH]; intros acc H; simpl; [exact H|].
  apply IH, merge_ids_distinct; exact H.
Qed.

Theorem c7_coq_same_deliveries_same_state : forall ms1 ms2 : list (list Frag),
  (forall f, In f (concat ms1) <-> In f (concat ms2)) ->
  (forall f, In f (replica ms1) <-> In f (replica ms2)) /\
  canonical_order (replica ms1) = canonical_order (replica ms2).
Proof.
  intros ms1 ms2 E.
  assert (S : forall f, In f (replica ms1) <-> In f (replica ms2)).
  { intro f; unfold replica; rewrite !fold_merge_in; simpl; specialize (E f); propositional. }
  split; [exact S|].
  apply canonical_order_determined; try exact S;
    apply fold_merge_ids_distinct; constructor.
Qed.

End Model.

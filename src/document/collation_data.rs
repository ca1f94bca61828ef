//! The collation data `document::collation` builds its ICU4X collators from: the CLDR data
//! compiled into `icu_collator` and `icu_normalizer`, with MongoDB's `backwards` applied.
//!
//! ICU4X's API sets backward secondary weighting (`backwards`, BCP 47 `kb`) only from a
//! locale's collation metadata (French of Canada turns it on); its comparison and sort keys
//! implement it for any locale. This provider hands the collator the compiled data unchanged
//! but for that one metadata bit, set as the collation asks, so `{locale: "en", backwards:
//! true}` and `{locale: "fr_CA", backwards: false}` compare as ICU4C's attribute makes them.

use icu_collator::provider::{
    CollationDiacriticsV1, CollationJamoV1, CollationMetadata, CollationMetadataV1,
    CollationReorderingV1, CollationRootV1, CollationSpecialPrimariesV1, CollationTailoringV1,
};
use icu_normalizer::provider::{NormalizerNfdDataV1, NormalizerNfdTablesV1};
use icu_provider::prelude::*;

/// `CollationMetadata`'s bit for backward secondary weighting (bit 7 of its data format,
/// which ICU4X keeps stable across versions).
const BACKWARD_SECOND_LEVEL: u32 = 1 << 7;

/// The compiled collation data, with the locale's `backwards` replaced when one is given.
pub struct CompiledData {
    pub backwards: Option<bool>,
}

impl DataProvider<CollationMetadataV1> for CompiledData {
    fn load(&self, req: DataRequest) -> Result<DataResponse<CollationMetadataV1>, DataError> {
        let mut response: DataResponse<CollationMetadataV1> =
            icu_collator::provider::Baked.load(req)?;
        if let Some(backwards) = self.backwards {
            let bits = response.payload.get().bits;
            let bits = if backwards {
                bits | BACKWARD_SECOND_LEVEL
            } else {
                bits & !BACKWARD_SECOND_LEVEL
            };
            response.payload = DataPayload::from_owned(CollationMetadata { bits });
        }
        Ok(response)
    }
}

/// Every other marker the collator loads comes from the compiled data as it is.
macro_rules! compiled {
    ($($marker:ty => $baked:expr),* $(,)?) => {$(
        impl DataProvider<$marker> for CompiledData {
            fn load(&self, req: DataRequest) -> Result<DataResponse<$marker>, DataError> {
                $baked.load(req)
            }
        }
    )*};
}

compiled! {
    CollationRootV1 => icu_collator::provider::Baked,
    CollationTailoringV1 => icu_collator::provider::Baked,
    CollationDiacriticsV1 => icu_collator::provider::Baked,
    CollationJamoV1 => icu_collator::provider::Baked,
    CollationReorderingV1 => icu_collator::provider::Baked,
    CollationSpecialPrimariesV1 => icu_collator::provider::Baked,
    NormalizerNfdDataV1 => icu_normalizer::provider::Baked,
    NormalizerNfdTablesV1 => icu_normalizer::provider::Baked,
}
